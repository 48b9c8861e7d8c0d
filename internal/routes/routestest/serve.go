package routestest

import (
	"context"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/h1"
)

// ServeH1 starts, on 127.0.0.1:0, the HTTP/1.1 front answering fast with
// an HTTP/1.1 and h2c net/http server behind it whose handler is slow,
// counting its requests, and shuts both down when t ends. It returns the
// URL, the count and the front, whose Stats tell served from handed off.
func ServeH1(t testing.TB, slow http.Handler, fast h1.Handler) (string, *atomic.Int64, *h1.Server) {
	t.Helper()
	var n atomic.Int64
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		slow.ServeHTTP(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv := &h1.Server{HTTP: &http.Server{Handler: counted, Protocols: &p}, Fast: fast}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("h1 front shutdown: %v", err)
		}
		if err := <-done; err != http.ErrServerClosed {
			t.Errorf("h1 front Serve returned %v, want http.ErrServerClosed", err)
		}
	})
	return "http://" + ln.Addr().String(), &n, srv
}

// H1Client is a plain HTTP/1.1 client (as connect-go's users build it)
// with its own connection pool, so the connections a test's front hands
// off stay with that test, closed when t ends. Its Transport writes a
// request's head and body separately; the front must serve that.
func H1Client(t testing.TB) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}
