package h1

import (
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
)

// A head Admit refuses goes to net/http as soon as it is whole, without
// waiting for its body; an admitted one is waited for.
func TestAdmitRefusesBeforeTheBody(t *testing.T) {
	ts := startServerWith(t, time.Minute, time.Minute, func(s *Server) {
		s.Admit = func(req *Request) bool { return string(req.Path) != "/decline" }
	})
	head := func(path string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: test\r\nContent-Length: 100\r\n\r\n"
	}
	dial(t, ts.addr).send(head("/decline"))
	poll.Until(t, 5*time.Second, "the refused request handed off", func() bool { return ts.Stats().HandOffs["refused"] == 1 })
	dial(t, ts.addr).send(head("/fast"))
	time.Sleep(100 * time.Millisecond) // nothing to poll for: the front must keep waiting
	if st := ts.Stats(); st.HandOffs["refused"] != 1 || st.HandOffs["incomplete"] != 0 {
		t.Fatalf("an admitted request whose body is coming was handed off: %+v", st)
	}
}

// Once a head is whole its body has BodyTimeout, not the head's timeout:
// a stalled body goes to net/http with the timeout as its read error.
func TestBodyTimeout(t *testing.T) {
	ts := startServerWith(t, time.Minute, time.Minute, func(s *Server) { s.BodyTimeout = 100 * time.Millisecond })
	c := dial(t, ts.addr)
	began := time.Now()
	c.send(post("/fast", strings.Repeat("x", 100))[:80])
	_, body := c.read()
	if !strings.HasPrefix(body, "slow:POST /fast") || time.Since(began) > 5*time.Second {
		t.Fatalf("answered %q after %v", body, time.Since(began))
	}
	if st := ts.Stats(); st.HandOffs["incomplete"] != 1 {
		t.Fatalf("stats %+v", st)
	}
}
