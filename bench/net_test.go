package bench

import (
	"net"
	"net/http"
	"testing"
	"time"
)

func freeAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func splitHostPort(addr string) (string, string, error) { return net.SplitHostPort(addr) }

func waitTCP(tb testing.TB, addr string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("%s did not accept connections", addr)
}

func waitHTTP(tb testing.TB, url string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatalf("%s did not answer", url)
}
