package serve

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/h1"
)

const (
	limitsTok  = "limits-client-token-0123456789"
	scraperTok = "limits-scraper-token-0123456789"
)

// runLimited runs a process with an auth file (one client token), the
// allocStub service with the front's NextIDs route declining everything,
// the protoEcho routes and limits l; it returns the address.
func runLimited(t *testing.T, fast bool, l Limits) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, []byte(`[{"name":"a","token":"`+limitsTok+`","roles":["client"]},
 {"name":"prom","token":"`+scraperTok+`","roles":["metrics"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	p := testProcess(fast, func(_ context.Context, env Env) (*App, error) {
		addr <- env.Addr
		var m h1.Mux
		m.Handle(seqsvrv1connect.AllocServiceNextIDsProcedure, h1.HandlerFunc(func(*h1.Request, *h1.Response) bool { return false }))
		return &App{Routes: allocTable(&allocStub{}, nil), Handler: Options{Routes: protoEcho()}, Fast: &m}, nil
	})
	p.Common.Security.AuthFile, p.Common.Limits = path, l
	ctx, cancel := context.WithCancel(context.Background())
	done := runBackground(ctx, p)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	a := <-addr
	waitServing(t, "http://"+a)
	return a
}

// rawExchange writes req on a new connection and reads until the server
// closes it (failing after 5 s); it returns what was read and how long
// the close took.
func rawExchange(t *testing.T, addr, req string) (string, time.Duration) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	began := time.Now()
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("%q: connection still open after 5 s, read %q", req, b)
	}
	return string(b), time.Since(began)
}

// A caller without a token is refused on its headers: with 2 MiB declared
// (over --max-body-bytes) and none sent, it gets the auth answer (not the
// size answer), in its protocol's form, with Connection: close, and the
// connection is closed at once, without waiting for the body.
func TestGateRefusesOnTheHeaders(t *testing.T) {
	eachFastHTTP(t, func(t *testing.T, fast bool) {
		addr := runLimited(t, fast, Limits{})
		proc := seqsvrv1connect.AllocServiceNextIDsProcedure
		for _, c := range []struct {
			name, path, ctype string
			want              []string
		}{
			{"connect unary", proc, "application/proto", []string{"HTTP/1.1 401 ", `"code":"unauthenticated"`}},
			{"connect json", proc, "application/json", []string{"HTTP/1.1 401 ", `"code":"unauthenticated"`}},
			{"connect streaming", proc, "application/connect+proto", []string{"HTTP/1.1 200 ", `"code":"unauthenticated"`}},
			{"grpc", proc, "application/grpc", []string{"HTTP/1.1 200 ", "Grpc-Status: 16"}},
			{"grpc-web", proc, "application/grpc-web+proto", []string{"HTTP/1.1 200 ", "Grpc-Status: 16"}},
			{"unknown procedure", "/seqsvr.v1.AllocService/NoSuch", "application/proto", []string{"HTTP/1.1 401 "}},
			{"route", "/echo", "text/plain", []string{"HTTP/1.1 401 ", "Www-Authenticate: Bearer"}},
		} {
			got, took := rawExchange(t, addr, "POST "+c.path+" HTTP/1.1\r\nHost: x\r\nContent-Type: "+c.ctype+
				"\r\nContent-Length: 2097152\r\n\r\n")
			for _, w := range append(c.want, "Connection: close") {
				if !strings.Contains(got, w) {
					t.Errorf("%s: answer lacks %q:\n%s", c.name, w, got)
				}
			}
			if took > 2*time.Second {
				t.Errorf("%s: closed after %v", c.name, took)
			}
		}
		// An unknown token, and a token without the role
		// (permission_denied), the same way.
		for tok, want := range map[string]string{"nope-nope-nope-nope-nope": "HTTP/1.1 401 ", scraperTok: "HTTP/1.1 403 "} {
			got, took := rawExchange(t, addr, "POST "+proc+" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tok+"\r\n"+
				"Content-Type: application/proto\r\nContent-Length: 100\r\n\r\n")
			if !strings.HasPrefix(got, want) || !strings.Contains(got, "Connection: close") || took > 2*time.Second {
				t.Errorf("token %s: answered %q after %v, want %q and Connection: close at once", tok, got, took, want)
			}
		}
	})
}

// A body that stalls is cut off at --body-timeout, and a chunked one
// that trickles at --body-min-rate's grace, on the front and net/http:
// answered deadline_exceeded and closed.
func TestBodyTimeoutAndMinRate(t *testing.T) {
	eachFastHTTP(t, func(t *testing.T, fast bool) {
		addr := runLimited(t, fast, Limits{BodyTimeout: 300 * time.Millisecond, BodyMinRate: 1 << 20})
		head := "POST " + seqsvrv1connect.AllocServiceNextIDsProcedure + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + limitsTok +
			"\r\nContent-Type: application/proto\r\n"
		for name, req := range map[string]string{
			"small stalled body": head + "Content-Length: 100\r\n\r\n0123456789",
			"large stalled body": head + "Content-Length: 100000\r\n\r\n0123456789",
			"chunked trickle":    head + "Transfer-Encoding: chunked\r\n\r\n1\r\nx\r\n",
		} {
			got, took := rawExchange(t, addr, req)
			if !strings.Contains(got, "deadline_exceeded") || !strings.Contains(got, "Connection: close") {
				t.Errorf("%s: answered %q", name, got)
			}
			if took > 3*time.Second {
				t.Errorf("%s: closed after %v", name, took)
			}
		}
	})
}

// The in-flight budget refuses a body's bytes past it, but never a
// body's first freeBodyBytes, and gives them back when the handler ends.
func TestBodiesInFlight(t *testing.T) {
	g := &bodyGuard{timeout: time.Minute, inFlight: 32 << 10}
	read := func(n int) (func(), error) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", n)))
		release := g.wrap(httptest.NewRecorder(), r)
		_, err := io.ReadAll(r.Body)
		return release, err
	}
	rel1, err := read(40 << 10) // 24 KiB counted
	if err != nil {
		t.Fatal(err)
	}
	if _, err := read(40 << 10); err != errBodiesInFull {
		t.Fatalf("second large body: %v, want errBodiesInFull", err)
	}
	if _, err := read(freeBodyBytes); err != nil {
		t.Fatalf("small body refused: %v", err)
	}
	rel1()
	if _, err := read(40 << 10); err != nil {
		t.Fatalf("after the first was released: %v", err)
	}
}

// Over --max-conns-per-addr a plain connection is answered 503 and
// closed; another address is still accepted; a closed connection gives
// its slot back.
func TestConnLimit(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := newLimitListener(raw, 3, 2, true).(*limitListener)
	defer ln.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func(from string) net.Conn {
		c, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.ParseIP(from)}, raw.Addr().(*net.TCPAddr))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	shed := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		line, _ := bufio.NewReader(c).ReadString('\n')
		return strings.HasPrefix(line, "HTTP/1.1 503 ")
	}
	a1, _ := dial("127.0.0.1"), dial("127.0.0.1")
	first := <-accepted
	<-accepted
	if !shed(dial("127.0.0.1")) {
		t.Fatal("third connection from one address not shed")
	}
	dial("127.0.0.2")
	<-accepted
	if !shed(dial("127.0.0.3")) {
		t.Fatal("connection over the total not shed")
	}
	first.Close()
	a1.Close()
	dial("127.0.0.1")
	select {
	case <-accepted:
	case <-time.After(5 * time.Second):
		t.Fatal("slot not given back after Close")
	}
	if open, n := ln.counts(); open != 3 || n != 2 {
		t.Fatalf("counts: %d open, %d shed; want 3, 2", open, n)
	}
}

// With an Authorizer, an anonymous /metrics has no series labelled with
// a tag or space name; a token (role metrics) sees them; an unknown
// token is refused.
func TestMetricsGuard(t *testing.T) {
	path := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(path, []byte(`[{"name":"prom","token":"scraper-token-0123456789","roles":["metrics"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.New(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	served := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ids_total", Help: "h"}, []string{"tag"})
	keys := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "keys", Help: "h"}, []string{"space"})
	plain := prometheus.NewCounter(prometheus.CounterOpts{Name: "calls_total", Help: "h"})
	reg.MustRegister(served, keys, plain)
	served.WithLabelValues("secret-tag").Inc()
	keys.WithLabelValues("secret-space").Set(1)
	plain.Inc()
	scrape := func(h http.Handler, token string) (int, string) {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code, w.Body.String()
	}
	h := metricsHandler(reg, a)
	if code, body := scrape(h, ""); code != 200 || strings.Contains(body, "secret") || !strings.Contains(body, "calls_total 1") {
		t.Errorf("anonymous: %d\n%s", code, body)
	}
	if code, body := scrape(h, "scraper-token-0123456789"); code != 200 || !strings.Contains(body, `tag="secret-tag"`) || !strings.Contains(body, `space="secret-space"`) {
		t.Errorf("scraper token: %d\n%s", code, body)
	}
	if code, _ := scrape(h, "unknown-token-0123456789"); code != http.StatusUnauthorized {
		t.Errorf("unknown token: %d", code)
	}
	if _, body := scrape(metricsHandler(reg, nil), ""); !strings.Contains(body, "secret-tag") {
		t.Errorf("without --auth-file /metrics is whole:\n%s", body)
	}
}
