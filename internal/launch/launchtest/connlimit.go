package launchtest

import (
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
)

// CheckConnLimit holds perAddr idle connections from 127.0.0.3 and wants
// the next one from there shed (a 503 line on plain HTTP, closed under
// TLS) while the normal client, from another address, is still served.
func CheckConnLimit(t *testing.T, tg Target, perAddr int) {
	t.Helper()
	ctx := Context(t, time.Minute)
	d := DialerFrom("127.0.0.3")
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range perAddr {
		c, err := d.DialContext(ctx, "tcp", tg.Addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	// The server counts a connection when it accepts it: wait until the
	// one over the bound is shed, as the held ones are accepted.
	var got string
	poll.UntilCtx(ctx, t, "a connection over --max-conns-per-addr shed", func() bool {
		c, err := d.DialContext(ctx, "tcp", tg.Addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(3 * time.Second))
		if tg.TLS == nil {
			_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		}
		b, err := io.ReadAll(c)
		got = string(b)
		if tg.TLS != nil {
			return len(b) == 0 && closedOK(err) == nil
		}
		return strings.HasPrefix(got, "HTTP/1.1 503 ")
	})
	if tg.TLS == nil && !strings.Contains(got, "Connection: close") {
		t.Errorf("shed answer %q has no Connection: close", got)
	}
	if err := tg.Normal(ctx); err != nil {
		t.Errorf("normal client from another address while one address is at its bound: %v", err)
	}
}
