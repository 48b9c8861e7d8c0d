// Package connectfasttest serves a connectfast handler in tests with a
// count of the requests that reached connect-go behind it, so a test can
// tell which path answered a real connect-go client.
package connectfasttest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// Serve starts an HTTP/1.1 and h2c server whose handler is fast(slow'),
// where slow' is slow counting its requests, and closes it when t ends.
// It returns the server's URL and the count.
func Serve(t testing.TB, slow http.Handler, fast func(next http.Handler) http.Handler) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		slow.ServeHTTP(w, r)
	})
	srv := httptest.NewUnstartedServer(fast(counted))
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv.Config.Protocols = &p
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, &n
}
