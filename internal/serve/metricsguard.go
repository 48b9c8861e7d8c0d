package serve

import (
	"net/http"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/seqsvr/seqsvr/internal/auth"
)

// namingLabels are the labels whose values are names callers give: tags
// and spaces. A caller who may not list tags must not read them off
// /metrics either.
var namingLabels = []string{"tag", "space"}

// metricsHandler serves /metrics from g. Without an Authorizer (no
// --auth-file) it shows everything, as before. With one, a scrape without
// an Authorization header gets every series except those labelled with a
// tag or space name (namingLabels); one with a token of any role (the
// scraper's token, role metrics, is the least) gets them all; one with an
// unknown token is refused 401, so a scraper's wrong token shows up as a
// failed scrape rather than as missing series.
func metricsHandler(g prometheus.Gatherer, a *auth.Authorizer) http.Handler {
	full := promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	if a == nil {
		return full
	}
	anon := promhttp.HandlerFor(unnamed{g}, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := r.Header.Get("Authorization")
		if h == "" {
			anon.ServeHTTP(w, r)
			return
		}
		if _, err := a.CheckRole(h, auth.Metrics, "/metrics"); err != nil {
			auth.WriteLeafRefusal(w, err)
			return
		}
		full.ServeHTTP(w, r)
	})
}

// unnamed is a Gatherer without the series that carry a naming label.
type unnamed struct{ g prometheus.Gatherer }

func (u unnamed) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := u.g.Gather()
	out := mfs[:0]
	for _, mf := range mfs {
		mf.Metric = slices.DeleteFunc(mf.Metric, func(m *dto.Metric) bool {
			return slices.ContainsFunc(m.Label, func(l *dto.LabelPair) bool {
				return slices.Contains(namingLabels, l.GetName())
			})
		})
		if len(mf.Metric) > 0 {
			out = append(out, mf)
		}
	}
	return out, err
}
