package serve

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqsvr/seqsvr/internal/routes"
	"github.com/seqsvr/seqsvr/internal/rpcmetrics"
)

// startingHandler serves, while Open still runs, the few procedures a
// component answers before it is open (a storesvr without Raft state
// answers MemberProbe while it decides whether to bootstrap or rejoin),
// /readyz from ready (which says why it is not ready yet), /healthz and
// /metrics; everything else gets the usual 503 "starting". The token gate
// and the Connect options are the ones the open component gets.
func startingHandler(t routes.Table, ready func(context.Context) error, copts []connect.HandlerOption, sec security,
	reg *prometheus.Registry, rpcm *rpcmetrics.Metrics, maxBody int64, logger *slog.Logger) http.Handler {
	o := Options{Logger: logger, Gatherer: reg, Auth: sec.auth, RPCMetrics: rpcm, Ready: ready, MaxBodyBytes: maxBody}
	mount(&o, &App{Routes: t}, copts, maxBody, logger)
	h := NewHandler(o)
	known := map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}
	for _, p := range t.Procedures {
		known[p.Name] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if known[r.URL.Path] || strings.HasPrefix(r.URL.Path, "/grpc.health.v1.") {
			h.ServeHTTP(w, r)
			return
		}
		http.Error(w, "starting", http.StatusServiceUnavailable)
	})
}
