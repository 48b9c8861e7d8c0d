package bench

import (
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// freePort is a loopback port for a reference server (bare handler,
// Redis), picked by the same allocator as the cluster's own processes so
// the two never collide.
func freePort(tb testing.TB) string {
	tb.Helper()
	port, err := launch.FreePort("127.0.0.1")
	if err != nil {
		tb.Fatal(err)
	}
	return strconv.Itoa(port)
}

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
