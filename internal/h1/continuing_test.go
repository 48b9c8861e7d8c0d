package h1

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// The front must treat a connection it keeps serving exactly as net/http
// would. Each test here runs the same bytes against the front and against
// plain net/http set up as internal/serve sets it up (HTTP/1.1 and
// unencrypted HTTP/2), whose handler answers /fast as the front's route
// does, and wants the same answers.

// plainServer is net/http alone, with startServerWith's settings.
func plainServer(t *testing.T, idle, readHeader time.Duration) string {
	t.Helper()
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.RequestURI == "/fast" && r.Proto == "HTTP/1.1" && r.Method != http.MethodHead {
			w.Header().Set("Content-Type", "text/plain")
			fmt.Fprintf(w, "fast:%s", body)
			return
		}
		fmt.Fprintf(w, "slow:%s %s %s %s", r.Method, r.URL.Path, body, r.Proto)
	}), Protocols: &p, ReadHeaderTimeout: readHeader, IdleTimeout: idle}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String()
}

// both runs f against the front and against plain net/http.
func both(t *testing.T, idle, readHeader time.Duration, f func(t *testing.T, addr string)) {
	t.Run("front", func(t *testing.T) { f(t, startServerWith(t, idle, readHeader).addr) })
	t.Run("net/http", func(t *testing.T) { f(t, plainServer(t, idle, readHeader)) })
}

func (c *client) wantBody(want string) {
	c.t.Helper()
	if _, body := c.read(); body != want {
		c.t.Fatalf("got %q, want %q", body, want)
	}
}

// wantClosedWithin wants the server to close the connection, with nothing
// more written, within d.
func (c *client) wantClosedWithin(d time.Duration) {
	c.t.Helper()
	start := time.Now()
	_ = c.c.SetReadDeadline(start.Add(d))
	b, err := c.br.ReadByte()
	if err == nil {
		c.t.Fatalf("server wrote %q, want it to close", b)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.t.Fatalf("connection still open after %v", d)
	}
}

// After an answered request, `PRI * HTTP/2.0` is an HTTP/1.1 request to
// net/http, not the start of HTTP/2: only a new connection may begin with
// HTTP/2's preface.
func TestPrefaceMidStreamIsHTTP1(t *testing.T) {
	both(t, time.Minute, time.Second, func(t *testing.T, addr string) {
		c := dial(t, addr)
		_ = c.c.SetDeadline(time.Now().Add(2 * time.Second))
		// An empty SETTINGS frame follows the preface, as an h2c client
		// would send it.
		c.send(post("/fast", "a") + "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
		c.wantBody("fast:a")
		c.wantBody("slow:PRI *  HTTP/2.0")
	})
}

// net/http skips a CR or LF that old clients send after a POST body.
func TestCRLFAfterPOSTIsSkipped(t *testing.T) {
	both(t, time.Minute, time.Second, func(t *testing.T, addr string) {
		c := dial(t, addr)
		c.send(post("/fast", "a") + "\r\n" + post("/fast", "b") + "\r\n" + post("/other", "c"))
		c.wantBody("fast:a")
		c.wantBody("fast:b")
		c.wantBody("slow:POST /other c HTTP/1.1")
	})
}

// A short malformed request after an answered one is answered 400 at once,
// not after ReadHeaderTimeout.
func TestShortMalformedRemainderAnsweredAtOnce(t *testing.T) {
	both(t, time.Minute, 3*time.Second, func(t *testing.T, addr string) {
		c := dial(t, addr)
		c.send(post("/fast", "a") + "XY\r\n\r\n")
		c.wantBody("fast:a")
		_ = c.c.SetReadDeadline(time.Now().Add(time.Second))
		if resp, _ := c.read(); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("got %d, want 400", resp.StatusCode)
		}
	})
}

// A later request's head has ReadHeaderTimeout from its first bytes, not
// the idle timeout.
func TestSlowLaterHeadGetsReadHeaderTimeout(t *testing.T) {
	both(t, time.Minute, 100*time.Millisecond, func(t *testing.T, addr string) {
		c := dial(t, addr)
		c.send(post("/fast", "a"))
		c.wantBody("fast:a")
		time.Sleep(200 * time.Millisecond) // idle longer than ReadHeaderTimeout: allowed
		c.send("POST /fast HTTP/1.1\r\nHost: t\r\n")
		c.wantClosedWithin(time.Second)
	})
}

// Idle, the connection waits for the next request's first 4 bytes within
// the idle timeout, not ReadHeaderTimeout.
func TestFewBytesWaitForIdleTimeout(t *testing.T) {
	both(t, 300*time.Millisecond, 50*time.Millisecond, func(t *testing.T, addr string) {
		c := dial(t, addr)
		c.send(post("/fast", "a"))
		c.wantBody("fast:a")
		c.send("PO")
		start := time.Now()
		c.wantClosedWithin(2 * time.Second)
		if d := time.Since(start); d < 150*time.Millisecond {
			t.Fatalf("closed after %v, before the idle timeout", d)
		}
	})
}

// A request cut short by the client's hang-up gets what net/http makes of
// it: here its head is whole, so the handler runs with the body there is
// (net/http's, behind the front: the front's routes get whole requests).
func TestHangUpMidRequestIsNetHTTPs(t *testing.T) {
	both(t, time.Minute, time.Second, func(t *testing.T, addr string) {
		for _, first := range []bool{true, false} {
			c := dial(t, addr)
			if !first {
				c.send(post("/fast", "a"))
				c.wantBody("fast:a")
			}
			c.send(post("/fast", "abcdef")[:len(post("/fast", "abcdef"))-3])
			if err := c.c.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			if _, body := c.read(); body != "fast:abc" && body != "slow:POST /fast abc HTTP/1.1" {
				t.Fatalf("got %q, want the request with body abc", body)
			}
		}
	})
}
