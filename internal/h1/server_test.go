package h1

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
)

// testServer runs a front whose routes are
//
//	/fast     answers "fast:" + body
//	/decline  declines
//	/panic    panics
//	/block    waits for release, then answers "released"
//
// in front of a net/http handler that answers "slow:" + method + path +
// body + protocol, so every answer tells which server gave it.
type testServer struct {
	*Server
	addr     string
	release  chan struct{} // closed by unblock
	unblockO sync.Once
	blocked  chan struct{}
	slow     atomic.Int64
	done     chan error
	ln       net.Listener
	lnClosed bool // the test closed the listener itself
}

func startServer(t *testing.T, idle time.Duration) *testServer {
	return startServerWith(t, idle, 0)
}

// startServerWith is startServer with net/http's ReadHeaderTimeout and
// opts applied to the front before it serves.
func startServerWith(t *testing.T, idle, readHeader time.Duration, opts ...func(*Server)) *testServer {
	t.Helper()
	ts := &testServer{release: make(chan struct{}), blocked: make(chan struct{}, 1), done: make(chan error, 1)}
	var m Mux
	m.Handle("/fast", HandlerFunc(func(req *Request, resp *Response) bool {
		resp.SetHeader("Content-Type", "text/plain")
		resp.Body = append(append(resp.Buf[:0], "fast:"...), req.Body...)
		return true
	}))
	m.Handle("/decline", HandlerFunc(func(*Request, *Response) bool { return false }))
	m.Handle("/memo", HandlerFunc(func(req *Request, resp *Response) bool {
		n, _ := req.Memo.(*int)
		if n == nil {
			n = new(int)
			req.Memo = n
		}
		*n++
		resp.Body = fmt.Appendf(resp.Buf[:0], "memo:%d", *n)
		return true
	}))
	m.Handle("/panic", HandlerFunc(func(*Request, *Response) bool { panic("boom") }))
	m.Handle("/block", HandlerFunc(func(_ *Request, resp *Response) bool {
		ts.blocked <- struct{}{}
		<-ts.release
		resp.Body = []byte("released")
		return true
	}))
	m.Handle("/block-decline", HandlerFunc(func(*Request, *Response) bool {
		ts.blocked <- struct{}{}
		<-ts.release
		return false
	}))
	m.Handle("/sleep", HandlerFunc(func(_ *Request, resp *Response) bool {
		time.Sleep(400 * time.Millisecond)
		resp.Body = []byte("slept")
		return true
	}))
	m.Handle("/headers", HandlerFunc(func(_ *Request, resp *Response) bool {
		resp.SetHeader("X-Err", "a\r\nSet-Cookie: injected=1")
		resp.SetHeader("Content-Length", "999")
		resp.SetHeader("Connection", "keep-alive")
		resp.Body = []byte("h")
		return true
	}))
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ts.slow.Add(1)
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "slow:%s %s %s %s", r.Method, r.URL.Path, body, r.Proto)
	})
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	ts.Server = &Server{HTTP: &http.Server{Handler: slow, Protocols: &p, ReadHeaderTimeout: readHeader}, Fast: &m, IdleTimeout: idle}
	for _, o := range opts {
		o(ts.Server)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr, ts.ln = ln.Addr().String(), ln
	go func() { ts.done <- ts.Serve(ln) }()
	t.Cleanup(func() {
		_ = ts.Close()
		if err := <-ts.done; !errors.Is(err, http.ErrServerClosed) && !ts.lnClosed {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
	})
	// Runs first: a test that failed before it released /block must not
	// leave its handler waiting.
	t.Cleanup(ts.unblock)
	return ts
}

// unblock lets every /block request go on.
func (ts *testServer) unblock() { ts.unblockO.Do(func() { close(ts.release) }) }

// waitBlocked waits until a /block request reached its handler; a server
// that never runs it fails the test instead of hanging it.
func (ts *testServer) waitBlocked(t *testing.T) {
	t.Helper()
	select {
	case <-ts.blocked:
	case <-time.After(30 * time.Second):
		t.Fatal("the /block request did not reach its handler within 30s")
	}
}

// client is one raw connection that writes requests and reads responses.
type client struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return &client{t: t, c: c, br: bufio.NewReader(c)}
}

func (c *client) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.c, s); err != nil {
		c.t.Fatal(err)
	}
}

func (c *client) read() (*http.Response, string) {
	c.t.Helper()
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		c.t.Fatalf("read response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("read body: %v", err)
	}
	return resp, string(body)
}

func post(path, body string, extra ...string) string {
	h := ""
	for _, e := range extra {
		h += e + "\r\n"
	}
	return fmt.Sprintf("POST %s HTTP/1.1\r\nHost: test\r\n%sContent-Length: %d\r\n\r\n%s", path, h, len(body), body)
}

func TestFastThenHandOffOnOneConnection(t *testing.T) {
	ts := startServer(t, 0)
	c := dial(t, ts.addr)
	for i := 0; i < 3; i++ {
		c.send(post("/fast", fmt.Sprint(i)))
		resp, body := c.read()
		if resp.StatusCode != 200 || body != fmt.Sprintf("fast:%d", i) || resp.Header.Get("Content-Type") != "text/plain" {
			t.Fatalf("fast call %d: %d %q %v", i, resp.StatusCode, body, resp.Header)
		}
		if resp.Header.Get("Date") == "" || resp.Close {
			t.Fatalf("fast answer lacks Date or closes: %v", resp.Header)
		}
	}
	c.send(post("/other", "x"))
	if _, body := c.read(); body != "slow:POST /other x HTTP/1.1" {
		t.Fatalf("handed-off call: %q", body)
	}
	// The connection is net/http's from now on, fast route or not.
	c.send(post("/fast", "y"))
	if _, body := c.read(); body != "slow:POST /fast y HTTP/1.1" {
		t.Fatalf("call after hand-off: %q", body)
	}
	st := ts.Stats()
	if st.Served != 3 || st.HandOffs["declined"] != 1 || ts.slow.Load() != 2 {
		t.Fatalf("stats %+v, slow %d", st, ts.slow.Load())
	}
}

func TestPipelinedRequestsAnsweredInOrder(t *testing.T) {
	ts := startServer(t, 0)
	c := dial(t, ts.addr)
	c.send(post("/fast", "a") + post("/fast", "b") + post("/decline", "c") + post("/fast", "d"))
	for _, want := range []string{"fast:a", "fast:b", "slow:POST /decline c HTTP/1.1", "slow:POST /fast d HTTP/1.1"} {
		if _, body := c.read(); body != want {
			t.Fatalf("got %q, want %q", body, want)
		}
	}
}

// Request.Memo is the connection's: it carries from one request to the
// next on a connection and a new connection starts without it.
func TestMemoIsPerConnection(t *testing.T) {
	ts := startServer(t, 0)
	c1, c2 := dial(t, ts.addr), dial(t, ts.addr)
	for _, step := range []struct {
		c    *client
		want string
	}{{c1, "memo:1"}, {c1, "memo:2"}, {c2, "memo:1"}, {c1, "memo:3"}, {c2, "memo:2"}} {
		step.c.send(post("/memo", ""))
		if _, body := step.c.read(); body != step.want {
			t.Fatalf("got %q, want %q", body, step.want)
		}
	}
}

func TestRequestInPiecesIsServed(t *testing.T) {
	ts := startServer(t, 0)
	c := dial(t, ts.addr)
	// As http.Transport sends it: the head, then the body in a second
	// write; and then a head cut in the middle.
	req := post("/fast", "hello")
	for _, cut := range []int{len(req) - 5, 20} {
		c.send(req[:cut])
		time.Sleep(20 * time.Millisecond) // let the front see the first piece alone
		c.send(req[cut:])
		if _, body := c.read(); body != "fast:hello" {
			t.Fatalf("cut at %d: got %q", cut, body)
		}
	}
	if st := ts.Stats(); st.Served != 2 || ts.slow.Load() != 0 {
		t.Fatalf("stats %+v, slow %d", st, ts.slow.Load())
	}
}

func TestClientQuietMidRequestIsDropped(t *testing.T) {
	ts := startServer(t, 50*time.Millisecond)
	c := dial(t, ts.addr)
	c.send(post("/fast", "hello")[:30])
	if _, err := c.br.ReadByte(); err != io.EOF {
		t.Fatalf("half a request kept the connection open (%v)", err)
	}
	if st := ts.Stats(); st.Served != 0 || ts.slow.Load() != 0 {
		t.Fatalf("stats %+v, slow %d", st, ts.slow.Load())
	}
}

func TestLargeBodyGoesToNetHTTP(t *testing.T) {
	ts := startServer(t, 0)
	c := dial(t, ts.addr)
	big := strings.Repeat("z", 2*BufferSize)
	c.send(post("/fast", big))
	if _, body := c.read(); body != "slow:POST /fast "+big+" HTTP/1.1" {
		t.Fatalf("got %d bytes", len(body))
	}
	if n := ts.Stats().HandOffs["too_large"]; n != 1 {
		t.Fatalf("too_large hand-offs %d, want 1", n)
	}
}

func TestNetHTTPAnswersWhatTheFrontLeaves(t *testing.T) {
	ts := startServer(t, 0)
	for name, tc := range map[string]struct{ req, status, body string }{
		"HTTP/1.0":  {"GET /fast HTTP/1.0\r\n\r\n", "200", "slow:GET /fast  HTTP/1.0"},
		"chunked":   {"POST /fast HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", "200", "slow:POST /fast abc HTTP/1.1"},
		"query":     {"GET /fast?x=1 HTTP/1.1\r\nHost: t\r\n\r\n", "200", "slow:GET /fast  HTTP/1.1"},
		"CORS":      {post("/fast", "o", "Origin: http://example.com"), "200", "slow:POST /fast o HTTP/1.1"},
		"no Host":   {"GET /fast HTTP/1.1\r\n\r\n", "400", ""},
		"garbage":   {"\x00\x01\x02 nonsense\r\n\r\n", "400", ""},
		"bare LF":   {"GET /fast HTTP/1.1\nHost: t\n\n", "200", "slow:GET /fast  HTTP/1.1"},
		"two Hosts": {"GET /fast HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", "400", ""},
	} {
		t.Run(name, func(t *testing.T) {
			c := dial(t, ts.addr)
			c.send(tc.req)
			resp, body := c.read()
			if fmt.Sprint(resp.StatusCode) != tc.status || tc.body != "" && body != tc.body {
				t.Fatalf("got %d %q, want %s %q", resp.StatusCode, body, tc.status, tc.body)
			}
		})
	}
}

func TestH2CPriorKnowledgeReachesNetHTTP(t *testing.T) {
	ts := startServer(t, 0)
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	hc := &http.Client{Transport: &http.Transport{Protocols: &p}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Post("http://"+ts.addr+"/fast", "text/plain", strings.NewReader("h2"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "slow:POST /fast h2 HTTP/2.0" {
		t.Fatalf("got %q", body)
	}
}

func TestGoClientOverHTTP1IsServedByTheFront(t *testing.T) {
	ts := startServer(t, 0)
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	for i := 0; i < 5; i++ {
		resp, err := hc.Post("http://"+ts.addr+"/fast", "text/plain", strings.NewReader("go"))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "fast:go" {
			t.Fatalf("call %d: %q", i, body)
		}
	}
	if st := ts.Stats(); st.Served != 5 || ts.slow.Load() != 0 {
		t.Fatalf("stats %+v, slow %d", st, ts.slow.Load())
	}
}

func TestConnectionClose(t *testing.T) {
	ts := startServer(t, 0)
	c := dial(t, ts.addr)
	c.send(post("/fast", "bye", "Connection: close"))
	resp, body := c.read()
	if body != "fast:bye" || !resp.Close {
		t.Fatalf("got %q, close %v", body, resp.Close)
	}
	if _, err := c.br.ReadByte(); err != io.EOF {
		t.Fatalf("connection still open after Connection: close (%v)", err)
	}
}

func TestPanicClosesOnlyThatConnection(t *testing.T) {
	ts := startServer(t, 0)
	c := dial(t, ts.addr)
	c.send(post("/panic", ""))
	if _, err := c.br.ReadByte(); err == nil {
		t.Fatal("a panicking route answered")
	}
	c2 := dial(t, ts.addr)
	c2.send(post("/fast", "ok"))
	if _, body := c2.read(); body != "fast:ok" {
		t.Fatalf("after a panic: %q", body)
	}
}

func TestIdleConnectionIsClosed(t *testing.T) {
	ts := startServer(t, 50*time.Millisecond)
	c := dial(t, ts.addr)
	c.send(post("/fast", "1"))
	c.read()
	if _, err := c.br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection not closed by the server (%v)", err)
	}
}

func TestShutdownFinishesInFlightAndClosesIdle(t *testing.T) {
	ts := startServer(t, 0)
	idle := dial(t, ts.addr)
	idle.send(post("/fast", "1"))
	idle.read()
	busy := dial(t, ts.addr)
	busy.send(post("/block", ""))
	ts.waitBlocked(t)

	shut := make(chan error, 1)
	go func() { shut <- ts.Shutdown(context.Background()) }()
	if _, err := idle.br.ReadByte(); err != io.EOF {
		t.Fatalf("idle connection not closed by Shutdown (%v)", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	default:
	}
	ts.unblock()
	resp, body := busy.read()
	if body != "released" || !resp.Close {
		t.Fatalf("in-flight request: %q, close %v", body, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if c, err := net.Dial("tcp", ts.addr); err == nil {
		c.Close()
		t.Fatal("still accepting after Shutdown")
	}
}

func TestShutdownDeadlineClosesBusyConnections(t *testing.T) {
	ts := startServer(t, 0)
	busy := dial(t, ts.addr)
	busy.send(post("/block", ""))
	ts.waitBlocked(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ts.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v, want deadline exceeded", err)
	}
	if _, err := busy.br.ReadByte(); err == nil {
		t.Fatal("busy connection answered after a forced shutdown")
	}
	ts.unblock()
}

// A request in flight when Shutdown starts that the route then declines is
// answered by net/http, which must still be serving.
func TestShutdownAnswersAnInFlightHandOff(t *testing.T) {
	ts := startServer(t, 0)
	c := dial(t, ts.addr)
	c.send(post("/block-decline", "late"))
	ts.waitBlocked(t)
	shut := make(chan error, 1)
	go func() { shut <- ts.Shutdown(context.Background()) }()
	poll.Until(t, 10*time.Second, "Shutdown to start", ts.shutting.Load)
	ts.unblock()
	if _, body := c.read(); body != "slow:POST /block-decline late HTTP/1.1" {
		t.Fatalf("got %q", body)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// A new connection has ReadHeaderTimeout to send its first head, as with
// net/http, not the idle timeout.
func TestNewConnectionGetsReadHeaderTimeout(t *testing.T) {
	ts := startServerWith(t, time.Minute, 50*time.Millisecond)
	for _, partial := range []string{"", "GET /fast HTTP/1.1\r\nHost: a\r\n"} {
		c := dial(t, ts.addr)
		c.send(partial)
		if _, err := c.br.ReadByte(); err != io.EOF {
			t.Fatalf("after %q: connection not closed at ReadHeaderTimeout (%v)", partial, err)
		}
	}
}

// The deadline is pushed out before the answer is written, so a route
// slower than the idle timeout still answers.
func TestSlowRouteStillAnswers(t *testing.T) {
	ts := startServer(t, 200*time.Millisecond)
	c := dial(t, ts.addr)
	c.send(post("/sleep", ""))
	if _, body := c.read(); body != "slept" {
		t.Fatalf("got %q", body)
	}
}

func TestHEADGoesToNetHTTP(t *testing.T) {
	ts := startServer(t, 0)
	c := dial(t, ts.addr)
	c.send("HEAD /fast HTTP/1.1\r\nHost: t\r\n\r\n" + post("/fast", "after"))
	resp, err := http.ReadResponse(c.br, &http.Request{Method: http.MethodHead})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD: %v %v", resp, err)
	}
	resp.Body.Close()
	if _, body := c.read(); body != "slow:POST /fast after HTTP/1.1" {
		t.Fatalf("request after HEAD: %q", body)
	}
}

// Framing headers are the front's; a value cannot break a header line.
func TestRouteHeadersCannotBreakFraming(t *testing.T) {
	ts := startServer(t, 0)
	c := dial(t, ts.addr)
	c.send(post("/headers", "") + post("/fast", "next"))
	resp, body := c.read()
	if body != "h" || resp.ContentLength != 1 || resp.Header.Get("Set-Cookie") != "" || resp.Header.Get("X-Err") != "a  Set-Cookie: injected=1" {
		t.Fatalf("got %q, length %d, headers %v", body, resp.ContentLength, resp.Header)
	}
	if _, body := c.read(); body != "fast:next" {
		t.Fatalf("next answer: %q", body)
	}
}

// A listener closed from outside ends Serve with its error and stops the
// connections Serve started; nothing keeps serving without a listener.
func TestListenerClosedUnderServe(t *testing.T) {
	ts := startServer(t, 0)
	c := dial(t, ts.addr)
	c.send(post("/fast", "1"))
	c.read()
	ts.lnClosed = true
	ts.ln.Close()
	if err := <-ts.done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Serve returned %v, want net.ErrClosed", err)
	}
	ts.done <- nil // for the cleanup
	if _, err := c.br.ReadByte(); err != io.EOF {
		t.Fatalf("a front connection outlived Serve (%v)", err)
	}
}
