package rpcmetrics

import (
	"time"

	"github.com/seqsvr/seqsvr/internal/h1"
)

// H1 records the RPCs the HTTP/1.1 front answers itself (the fast paths
// of package connectfast), which never reach connect-go's interceptors.
// What next declines is not recorded here: net/http and the interceptor
// count it. Requests to non-RPC paths (the Leaf API) are passed through
// untimed.
func (m *Metrics) H1(next h1.Handler) h1.Handler {
	return h1.HandlerFunc(func(req *h1.Request, resp *h1.Response) bool {
		if !IsProcedure(req.Path) {
			return next.ServeH1(req, resp)
		}
		start := time.Now()
		if !next.ServeH1(req, resp) {
			return false
		}
		// The front serves only the Connect protocol (connectfast).
		m.observePath(req.Path, h1Code(resp), time.Since(start))
		return true
	})
}

// h1Code is the Connect code the front's route reported for its answer
// (connectfast sets it), never read back from the body.
func h1Code(resp *h1.Response) string {
	if resp.Code == "" {
		return "unknown"
	}
	return resp.Code
}

// observePath is Observe for a Connect call whose procedure is still the
// request's bytes: a success finds its cached series without allocating.
func (m *Metrics) observePath(path []byte, code string, d time.Duration) {
	if code == "ok" {
		s, ok := (*m.ok.Load())[string(path)]
		if !ok {
			s = m.okSeries(string(path))
		}
		s.handled.Inc()
		s.duration.Observe(d.Seconds())
		return
	}
	m.Observe(string(path), "connect", code, d)
}
