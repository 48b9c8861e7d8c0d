package bench

import (
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/poll"
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
	poll.UntilOK(tb, 10*time.Second, addr+" to accept connections", func() error {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err
	})
}

func waitHTTP(tb testing.TB, url string) {
	tb.Helper()
	poll.UntilOK(tb, 10*time.Second, url+" to answer", func() error {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
}
