package serve

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// BenchmarkBodyGuard prices the guard on net/http's path: a 100-byte POST
// on a kept-alive HTTP/1.1 connection read by the handler, with the guard
// (a read deadline set and lifted, the budget counted) and without it
// (the same-run reference), each a sub-benchmark on one server.
func BenchmarkBodyGuard(b *testing.B) {
	g := &bodyGuard{timeout: 10 * time.Second, minRate: 1024, inFlight: 64 << 20}
	mux := http.NewServeMux()
	mux.HandleFunc("/plain", func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) })
	mux.HandleFunc("/guarded", func(w http.ResponseWriter, r *http.Request) {
		defer g.wrap(w, r)()
		_, _ = io.Copy(io.Discard, r.Body)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	body := strings.Repeat("x", 100)
	for _, path := range []string{"/plain", "/guarded"} {
		b.Run(path[1:], func(b *testing.B) {
			c := srv.Client()
			for b.Loop() {
				res, err := c.Post(srv.URL+path, "application/proto", strings.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
			}
		})
	}
}
