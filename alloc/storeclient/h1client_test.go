package storeclient

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

// seen is what a test server saw of its last request and how many
// connections it accepted.
type seen struct {
	mu        sync.Mutex
	proto     string
	peerCerts int
	token     string
	conns     atomic.Int64
}

func (s *seen) last() (string, int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proto, s.peerCerts, s.token
}

// recordingStore answers GetTag and ReserveSegment (connect-go handler)
// and records each request's protocol, client certificates and token.
func recordingStore(s *seen) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(seqsvrv1connect.NewStoreServiceHandler(&countingStore{}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.proto, s.token, s.peerCerts = r.Proto, r.Header.Get("Authorization"), 0
		if r.TLS != nil {
			s.peerCerts = len(r.TLS.PeerCertificates)
		}
		s.mu.Unlock()
		// Calls are held ("hang") until the client goes away, not until
		// the propagated deadline: a server-side deadline that fires
		// first (the header is rounded to whole ms) answers the call, and
		// the client then rightly keeps the connection.
		r.Header.Del("Connect-Timeout-Ms")
		mux.ServeHTTP(w, r)
	})
}

type countingStore struct {
	seqsvrv1connect.UnimplementedStoreServiceHandler
	max atomic.Int64
}

func (h *countingStore) GetTag(_ context.Context, req *connect.Request[seqsvrv1.GetTagRequest]) (*connect.Response[seqsvrv1.Tag], error) {
	return connect.NewResponse(&seqsvrv1.Tag{Tag: req.Msg.GetTag()}), nil
}

func (h *countingStore) ClusterStatus(context.Context, *connect.Request[seqsvrv1.ClusterStatusRequest]) (*connect.Response[seqsvrv1.ClusterStatusResponse], error) {
	return connect.NewResponse(&seqsvrv1.ClusterStatusResponse{}), nil
}

func (h *countingStore) ReserveSegment(ctx context.Context, req *connect.Request[seqsvrv1.ReserveSegmentRequest]) (*connect.Response[seqsvrv1.Segment], error) {
	if req.Msg.GetTag() == "hang" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	size := max(req.Msg.GetSize(), 1)
	last := h.max.Add(size)
	return connect.NewResponse(&seqsvrv1.Segment{Tag: req.Msg.GetTag(), First: last - size + 1, Last: last}), nil
}

func countConns(s *seen) func(net.Conn, http.ConnState) {
	return func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
}

// TestH1TLSClientCertAndCAReload: the default client reaches an HTTPS
// store that requires a client certificate, over HTTP/1.1, with the
// token; it trusts a CA added to the CA file without being rebuilt, keeps
// its connection between calls, and drops a kept connection once the CA
// file's pool changed.
func TestH1TLSClientCertAndCAReload(t *testing.T) {
	oldCA, newCA, clientCA := tlstest.NewCA(t), tlstest.NewCA(t), tlstest.NewCA(t)
	dir := t.TempDir()
	clientCAFile := filepath.Join(dir, "client-ca.pem")
	tlstest.WriteBundle(t, clientCAFile, clientCA)
	sc, sk := newCA.Issue(t, "store", "127.0.0.1")
	skeys, err := tlsconf.LoadKeyPair(sc, sk, nil)
	if err != nil {
		t.Fatal(err)
	}
	scfg, err := tlsconf.Server(skeys, clientCAFile)
	if err != nil {
		t.Fatal(err)
	}
	var s seen
	ln, err := tls.Listen("tcp", "127.0.0.1:0", scfg)
	if err != nil {
		t.Fatal(err)
	}
	// The refused handshakes before the CA is trusted are expected.
	hs := &http.Server{Handler: recordingStore(&s), ConnState: countConns(&s), ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { hs.Close() })

	cc, ck := clientCA.Issue(t, "alloc", "127.0.0.1")
	ckeys, err := tlsconf.LoadKeyPair(cc, ck, nil)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	tlstest.WriteBundle(t, caFile, oldCA)
	ccfg, err := tlsconf.Client(caFile, ckeys)
	if err != nil {
		t.Fatal(err)
	}
	// Attempts and calls get far more time than they need: one cut short
	// by a loaded machine would drop its connection, and the count of
	// connections below would be wrong for a reason other than the pool.
	c, err := New([]string{"https://" + ln.Addr().String()}, Options{TLS: ccfg, Token: "tok-0123456789",
		RequestTimeout: 20 * time.Second, BackoffInitial: time.Millisecond, BackoffMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	callWithin := func(d time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		_, err := c.GetTag(ctx, "t")
		return err
	}
	call := func() error { return callWithin(20 * time.Second) }
	// Retried until its deadline: it must fail, however short.
	if err := callWithin(500 * time.Millisecond); err == nil {
		t.Fatal("a store whose CA is not in the CA file was trusted")
	}
	tlstest.WriteBundle(t, caFile, oldCA, newCA)
	poll.UntilOK(t, 30*time.Second, "call after the CA was added", call)
	proto, certs, tok := s.last()
	if proto != "HTTP/1.1" || certs != 1 || tok != "Bearer tok-0123456789" {
		t.Fatalf("server saw %s with %d client certificates and Authorization %q; want HTTP/1.1, 1, the token", proto, certs, tok)
	}
	n := s.conns.Load()
	for range 5 {
		if err := call(); err != nil {
			t.Fatal(err)
		}
	}
	if got := s.conns.Load(); got != n {
		t.Fatalf("5 sequential calls opened %d new connections, want 0 (kept alive)", got-n)
	}
	tlstest.WriteBundle(t, caFile, newCA) // the pool changes again
	poll.UntilOK(t, 30*time.Second, "a new connection under the new pool", func() error {
		if err := call(); err != nil {
			return err
		}
		if s.conns.Load() == n {
			return errors.New("still on the connection made under the old pool")
		}
		return nil
	})
}

// TestH1ConnectionsFollowConcurrency: 64 callers at once, five times over,
// use the same 64 connections: the pool holds what the concurrency needs
// (the transport before kept 32 and closed and dialed 32 every round).
//
// The server holds each round's reservations until all 64 are in flight,
// so the rounds need 64 connections at once whatever the scheduling. No
// deadline of the test may cut an attempt short: a retried attempt dials
// a new connection (the count is then wrong for a reason other than the
// pool) and arrives at the barrier twice. So attempts get far more time
// than the test waits for a round, a second arrival of one request fails
// the call at once, and when the test fails the held calls are released
// before the server is closed (srv.Close waits for its handlers).
func TestH1ConnectionsFollowConcurrency(t *testing.T) {
	const (
		callers = 64
		// roundWait bounds one round: a round takes milliseconds, even
		// under -race on a loaded machine; past this the client is stuck.
		roundWait = time.Minute
	)
	var s seen
	b := newBarrier(callers)
	mux := http.NewServeMux()
	mux.Handle(seqsvrv1connect.NewStoreServiceHandler(&barrierStore{b: b}))
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.ConnState = countConns(&s)
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := New([]string{srv.URL}, Options{
		RequestTimeout: 2 * roundWait, BackoffInitial: time.Millisecond, BackoffMax: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*roundWait)
	var wg sync.WaitGroup
	// Runs before srv.Close: ends the calls and frees the held handlers.
	t.Cleanup(func() {
		cancel()
		b.release()
		wg.Wait()
	})
	for round := range 5 {
		errc := make(chan error, callers)
		for i := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := c.ReserveSegment(ctx, "t", 1, "r"+strconv.Itoa(round*callers+i))
				errc <- err
			}()
		}
		timeout := time.NewTimer(roundWait)
		for range callers {
			select {
			case err := <-errc:
				if err != nil {
					timeout.Stop()
					t.Fatalf("round %d: %v (%s)", round, err, b)
				}
			case <-timeout.C:
				t.Fatalf("round %d: not done after %v (%s)", round, roundWait, b)
			}
		}
		timeout.Stop()
	}
	if got := s.conns.Load(); got != callers {
		t.Fatalf("%d connections for 5 rounds of %d callers at once, want %d", got, callers, callers)
	}
}

// barrier holds reservations until size of them are in flight at once,
// then lets them all go on.
type barrier struct {
	size int
	done chan struct{} // closed by release: every held call returns

	mu      sync.Mutex
	gate    chan struct{} // the held calls' gate, closed when size are held
	held    int           // calls waiting at gate
	passed  int           // calls let through
	arrived map[string]int
	again   int    // arrivals of a request ID seen before (retried attempts)
	first   string // the first request ID that arrived again
}

func newBarrier(size int) *barrier {
	return &barrier{size: size, done: make(chan struct{}), gate: make(chan struct{}), arrived: map[string]int{}}
}

// wait holds the call with request ID id until size calls are held; it
// fails a second arrival of one ID (the client retried an attempt) and a
// call whose client went away or which release freed.
func (b *barrier) wait(ctx context.Context, id string) error {
	b.mu.Lock()
	b.arrived[id]++
	if b.arrived[id] > 1 {
		if b.again++; b.again == 1 {
			b.first = id
		}
		b.mu.Unlock()
		return connect.NewError(connect.CodeFailedPrecondition, fmt.Errorf("request %s arrived again: an attempt was retried", id))
	}
	g := b.gate
	b.held++
	if b.held == b.size {
		close(b.gate)
		b.gate, b.held = make(chan struct{}), 0
		b.passed += b.size
	}
	b.mu.Unlock()
	select {
	case <-g:
		return nil
	case <-ctx.Done():
	case <-b.done:
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if g == b.gate {
		b.held-- // no longer in flight
	}
	return connect.NewError(connect.CodeFailedPrecondition, errors.New("released by the test"))
}

func (b *barrier) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-b.done:
	default:
		close(b.done)
	}
}

// String is what the server saw, for a failure's message.
func (b *barrier) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return fmt.Sprintf("server: %d distinct reservations arrived, %d let through, %d held, %d arrived again (first %q)",
		len(b.arrived), b.passed, b.held, b.again, b.first)
}

// barrierStore answers ReserveSegment after its barrier let it through
// (inside the connect handler the body has been read, so the call's
// context ends when the client goes away).
type barrierStore struct {
	countingStore
	b *barrier
}

func (h *barrierStore) ReserveSegment(ctx context.Context, req *connect.Request[seqsvrv1.ReserveSegmentRequest]) (*connect.Response[seqsvrv1.Segment], error) {
	if err := h.b.wait(ctx, req.Msg.GetRequestId()); err != nil {
		return nil, err
	}
	return h.countingStore.ReserveSegment(ctx, req)
}

// TestH1StaleAndCancelledConnections: a kept connection the server closed
// is replaced without an error; a call whose deadline passes while the
// server holds it fails with deadline_exceeded, and its connection is not
// used again.
func TestH1StaleAndCancelledConnections(t *testing.T) {
	var s seen
	srv := httptest.NewUnstartedServer(recordingStore(&s))
	srv.Config.ConnState = countConns(&s)
	srv.Start()
	t.Cleanup(srv.Close)
	c := testClient(t, []string{srv.URL})
	ctx := testCtx(t)
	if _, err := c.GetTag(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	n := s.conns.Load()
	srv.CloseClientConnections() // the server drops the kept connection
	if _, err := c.GetTag(ctx, "t"); err != nil {
		t.Fatalf("call after the server closed the kept connection: %v", err)
	}
	if got := s.conns.Load(); got != n+1 {
		t.Fatalf("%d new connections after the close, want 1", got-n)
	}

	// The tag "hang" is held by the server until the client goes away.
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.ReserveSegment(dctx, "hang", 1, "h1")
	if !errors.Is(err, errs.Unavailable) || !errors.Is(err, context.DeadlineExceeded) && connect.CodeOf(err) != connect.CodeDeadlineExceeded {
		t.Fatalf("held call: %v, want unavailable after the deadline", err)
	}
	// The bound is loose for a loaded machine (the return after the
	// deadline waits for the scheduler); a call the deadline did not cut
	// stays held as long as its connection is open.
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("held call returned after %v, its deadline was 200ms", d)
	}
	n = s.conns.Load()
	if _, err := c.GetTag(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if got := s.conns.Load(); got != n+1 {
		t.Fatalf("the call after a cut one opened %d connections, want 1 (the cut one is not reused)", got-n)
	}
}
