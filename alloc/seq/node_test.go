package seq

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/clock/clocktest"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/spec"
)

var t0 = time.Unix(1_700_000_000, 0)

// newNode returns a Node on store without its loop: tests beat by hand.
func newNode(t *testing.T, store Store, c *clocktest.Fake, id, url string) *Node {
	t.Helper()
	n, err := New(store, Config{NodeID: id, URL: url, Clock: c, FenceMargin: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.stop)
	return n
}

func mustBeat(t *testing.T, n *Node) {
	t.Helper()
	if err := n.beat(context.Background(), false); err != nil {
		t.Fatalf("%s heartbeat: %v", n.cfg.NodeID, err)
	}
}

func next(t *testing.T, n *Node, space string, keys ...uint64) []int64 {
	t.Helper()
	got, v, err := n.Next(context.Background(), space, keys, false)
	if err != nil {
		t.Fatalf("%s Next(%s, %v): %v", n.cfg.NodeID, space, keys, err)
	}
	if v == 0 {
		t.Fatalf("%s Next: routing_version 0", n.cfg.NodeID)
	}
	return got
}

func wantCode(t *testing.T, err error, code connect.Code) {
	t.Helper()
	if errs.Code(err) != code {
		t.Fatalf("error %v: code %v, want %v", err, errs.Code(err), code)
	}
}

// oneNode is a store with space "s" (20 keys, sections of 10, step 10)
// served by node "a".
func oneNode(t *testing.T) (*fakeStore, *clocktest.Fake, *Node) {
	c := clocktest.New(t0)
	st := newFakeStore(c)
	st.createSpace("s", 20, 10, 10)
	n := newNode(t, st, c, "a", "http://a")
	mustBeat(t, n)
	return st, c, n
}

func TestSectionValues(t *testing.T) {
	st, _, n := oneNode(t)
	if got := next(t, n, "s", 3, 3, 4, 13); got[0] != 1 || got[1] != 2 || got[2] != 1 || got[3] != 1 {
		t.Fatalf("first values %v, want [1 2 1 1]", got)
	}
	cur, _, err := n.Current(context.Background(), "s", []uint64{3, 5, 13}, false)
	if err != nil || cur[0] != 2 || cur[1] != 0 || cur[2] != 1 {
		t.Fatalf("Current = %v, %v; want [2 0 1]", cur, err)
	}
	prev := int64(2)
	for range 200 { // many raises: values climb by one, never past the committed max
		v := next(t, n, "s", 3)[0]
		if v != prev+1 {
			t.Fatalf("key 3: %d after %d", v, prev)
		}
		if m := st.maxSeq("s", 0); v > m {
			t.Fatalf("handed out %d above the committed max_seq %d", v, m)
		}
		prev = v
	}
}

func TestNeverPastMaxInt64(t *testing.T) {
	st, _, n := oneNode(t)
	st.setMax("s", 0, math.MaxInt64-10) // the load takes it to 2^63-1
	var last int64
	for {
		got, _, err := n.Next(context.Background(), "s", []uint64{0}, false)
		if err != nil {
			wantCode(t, err, connect.CodeResourceExhausted)
			break
		}
		if got[0] <= last {
			t.Fatalf("%d after %d", got[0], last)
		}
		last = got[0]
	}
	if last != math.MaxInt64 {
		t.Fatalf("stopped at %d, want 2^63-1", last)
	}
}

func TestRaiseAheadThreshold(t *testing.T) {
	st, _, n := oneNode(t)
	next(t, n, "s", 0) // load: max 10, handed out 1
	if w := n.writes.Load(); w != 1 {
		t.Fatalf("after one value %d writes, want only the load", w)
	}
	next(t, n, "s", 0) // 2: 8 left above it, under 90% of the step
	poll.Until(t, 5*time.Second, "the raise ahead", func() bool { return n.writes.Load() == 2 })
	if m := st.maxSeq("s", 0); m != 20 {
		t.Fatalf("max_seq %d after the raise ahead, want 20", m)
	}
}

func TestOneRaiseInFlight(t *testing.T) {
	st, _, n := oneNode(t)
	next(t, n, "s", 0)
	gate := make(chan struct{})
	st.mu.Lock()
	st.raiseGate = gate
	st.mu.Unlock()
	for range 8 { // values 2..9 with a raise held at the store
		next(t, n, "s", 0)
	}
	done := make(chan []int64)
	for range 3 { // 10, then two waiting for the raise
		go func() { done <- next(t, n, "s", 0) }()
	}
	time.Sleep(20 * time.Millisecond)
	close(gate)
	got := map[int64]bool{}
	for range 3 {
		got[(<-done)[0]] = true
	}
	if !got[10] || !got[11] || !got[12] {
		t.Fatalf("values %v, want 10, 11, 12", got)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.maxFlight != 1 {
		t.Fatalf("%d raises in flight at once, want 1", st.maxFlight)
	}
}

func TestWaitBoundedByContext(t *testing.T) {
	st, _, n := oneNode(t)
	st.mu.Lock()
	st.raiseGate = make(chan struct{})
	st.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, _, err := n.Next(ctx, "s", []uint64{0}, false) // the load is held
	wantCode(t, err, connect.CodeUnavailable)
	if n.Status().GetSpaces()[0].GetKeysInMemory() != 0 {
		t.Fatal("section loaded while its load was held")
	}
}

func TestLeaseRule(t *testing.T) {
	st, c, n := oneNode(t) // beat at t0: TTL 5s, margin 1s: serve until t0+4s
	first := next(t, n, "s", 1)[0]
	c.Advance(3999 * time.Millisecond)
	if v := next(t, n, "s", 1)[0]; v != first+1 {
		t.Fatalf("before the fence: %d after %d", v, first)
	}
	c.Advance(time.Millisecond)
	_, _, err := n.Next(context.Background(), "s", []uint64{1}, false)
	wantCode(t, err, connect.CodeUnavailable)
	if n.Status().GetLeaseValid() {
		t.Fatal("lease valid past its fence")
	}
	st.mu.Lock()
	st.beatErr = errs.Unavailable
	st.mu.Unlock()
	if err := n.beat(context.Background(), false); err == nil {
		t.Fatal("failing heartbeat answered")
	}
	n.checkLapse()
	if k := n.Status().GetSpaces()[0].GetKeysInMemory(); k != 0 {
		t.Fatalf("%d keys in memory after the lapse", k)
	}
	limit := st.maxSeq("s", 0)
	st.mu.Lock()
	st.beatErr = nil
	st.mu.Unlock()
	mustBeat(t, n)
	if v := next(t, n, "s", 1)[0]; v <= limit {
		t.Fatalf("after the lapse: %d, not above the committed max_seq %d", v, limit)
	}
}

func TestLapseWithoutDropIsNotServed(t *testing.T) {
	st, c, n := oneNode(t)
	next(t, n, "s", 1)
	c.Advance(5 * time.Second) // lapsed; memory not dropped yet (no loop)
	limit := st.maxSeq("s", 0)
	mustBeat(t, n) // a new lease generation: the old memory must not serve
	if v := next(t, n, "s", 1)[0]; v <= limit {
		t.Fatalf("served %d from memory loaded before the lapse (max_seq was %d)", v, limit)
	}
}

// twoNodes is a store with space "s" (keyCount keys, sections of 10, step
// 10) and nodes "a" and "b" at urlA and urlB, before any heartbeat.
func twoNodes(t *testing.T, keyCount uint64, urlA, urlB string) (*fakeStore, *Node, *Node) {
	c := clocktest.New(t0)
	st := newFakeStore(c)
	st.createSpace("s", keyCount, 10, 10)
	return st, newNode(t, st, c, "a", urlA), newNode(t, st, c, "b", urlB)
}

func TestHandover(t *testing.T) {
	st, a, b := twoNodes(t, 20, "http://a", "http://b")
	mustBeat(t, a)
	old := next(t, a, "s", 15)[0] // section 1, a's for now
	mustBeat(t, b)                // b live: section 1 goes to b, pending a's release
	if o, nx := st.owner("s", 1); o != "a" || nx != "b" {
		t.Fatalf("section 1 owner %q next %q", o, nx)
	}
	mustBeat(t, a) // a learns the handover: stops serving, asks for a beat
	_, _, err := a.Next(context.Background(), "s", []uint64{15}, false)
	wantCode(t, err, connect.CodeUnavailable)
	select {
	case <-a.kick:
	default:
		t.Fatal("no immediate heartbeat asked for the release")
	}
	mustBeat(t, a)
	if rel := st.lastBeat().GetReleased(); len(rel) != 1 || rel[0].GetFirstSection() != 1 || rel[0].GetLastSection() != 1 {
		t.Fatalf("released %v, want section 1", rel)
	}
	if o, _ := st.owner("s", 1); o != "b" {
		t.Fatalf("section 1 owner %q after the release", o)
	}
	mustBeat(t, b)
	if v := next(t, b, "s", 15)[0]; v <= old {
		t.Fatalf("new owner answered %d after %d", v, old)
	}
	if v := next(t, a, "s", 5)[0]; v != 1 {
		t.Fatalf("a's own section 0: %d", v)
	}
}

func TestClose(t *testing.T) {
	st, a, b := twoNodes(t, 20, "http://a", "http://b")
	mustBeat(t, a)
	mustBeat(t, b)
	mustBeat(t, a)
	mustBeat(t, a) // a released section 1 to b
	next(t, a, "s", 1)
	a.Close()
	if !st.lastBeat().GetLeaving() {
		t.Fatal("Close sent no leaving heartbeat")
	}
	if o, _ := st.owner("s", 0); o != "b" {
		t.Fatalf("section 0 owner %q after a left", o)
	}
	_, _, err := a.Next(context.Background(), "s", []uint64{1}, false)
	if !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

// serveNode serves n's SeqService at url (a started httptest server).
func serveNode(t *testing.T, mux *http.ServeMux, n *Node) {
	path, h := seqsvrv1connect.NewSeqServiceHandler(n.Handler())
	mux.Handle(path, h)
}

func TestRoutingSplitAndForward(t *testing.T) {
	muxA, muxB := http.NewServeMux(), http.NewServeMux()
	srvA, srvB := httptest.NewServer(muxA), httptest.NewServer(muxB)
	defer srvA.Close()
	defer srvB.Close()
	_, a, b := twoNodes(t, 40, srvA.URL, srvB.URL) // sections 0,1 -> a; 2,3 -> b
	serveNode(t, muxA, a)
	serveNode(t, muxB, b)
	mustBeat(t, a)
	mustBeat(t, b)
	mustBeat(t, a)
	mustBeat(t, a)
	mustBeat(t, b)

	keys := []uint64{35, 1, 25, 1, 11, 35}
	got, v, err := a.Next(context.Background(), "s", keys, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int64{1, 1, 1, 2, 1, 2}; !equal(got, want) {
		t.Fatalf("NextSeqs %v = %v, want %v", keys, got, want)
	}
	if v != a.loadTables()["s"].version() {
		t.Fatalf("routing_version %d", v)
	}
	if a.forwards.Load() != 1 {
		t.Fatalf("%d forwards, want 1 (one part for b)", a.forwards.Load())
	}
	cur, _, err := b.Current(context.Background(), "s", []uint64{1, 35, 11, 25}, false)
	if err != nil || !equal(cur, []int64{2, 2, 1, 1}) {
		t.Fatalf("CurrentSeqs through b = %v, %v", cur, err)
	}

	// A forwarded call for a section this node does not own is refused,
	// never forwarded again.
	_, _, err = a.Next(context.Background(), "s", []uint64{1, 35}, true)
	wantCode(t, err, connect.CodeUnavailable)
	if a.forwards.Load() != 1 {
		t.Fatal("a forwarded call was forwarded again")
	}
	if c, _, _ := a.Current(context.Background(), "s", []uint64{1}, false); c[0] != 2 {
		t.Fatalf("refused call took a value: key 1 at %d", c[0])
	}
}

func equal(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestBadInput(t *testing.T) {
	_, _, n := oneNode(t)
	many := make([]uint64, spec.MaxCount+1)
	for _, tc := range []struct {
		name  string
		space string
		keys  []uint64
		code  connect.Code
	}{
		{"unknown space", "nope", []uint64{0}, connect.CodeNotFound},
		{"key = key_count", "s", []uint64{20}, connect.CodeInvalidArgument},
		{"huge key", "s", []uint64{1 << 63}, connect.CodeInvalidArgument},
		{"one bad key among good", "s", []uint64{0, 1, 99}, connect.CodeInvalidArgument},
		{"no keys", "s", nil, connect.CodeInvalidArgument},
		{"too many keys", "s", many, connect.CodeInvalidArgument},
		{"malformed space", "a b", []uint64{0}, connect.CodeInvalidArgument},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := n.Next(context.Background(), tc.space, tc.keys, false)
			wantCode(t, err, tc.code)
			_, _, err = n.Current(context.Background(), tc.space, tc.keys, false)
			wantCode(t, err, tc.code)
		})
	}
	if w := n.writes.Load(); w != 0 {
		t.Fatalf("bad input caused %d max_seq writes", w)
	}
}

func TestNoTableYet(t *testing.T) {
	c := clocktest.New(t0)
	n := newNode(t, newFakeStore(c), c, "a", "http://a")
	_, _, err := n.Next(context.Background(), "s", []uint64{0}, false)
	wantCode(t, err, connect.CodeUnavailable)
	if n.Status().GetReason() == "" {
		t.Fatal("no reason given before the first heartbeat")
	}
}

// TestCurrentZeroForNeverUsedAfterHandover: the contract's CurrentSeqs
// answers 0 for a key never used, also after its section moved to another
// allocsvr (the used-set travels through the store), while every key the
// old owner used reads at least what it handed out, and a NextSeq after
// either is larger.
func TestCurrentZeroForNeverUsedAfterHandover(t *testing.T) {
	st, a, b := twoNodes(t, 20, "http://a", "http://b")
	mustBeat(t, a)
	var last15 int64
	for range 3 {
		last15 = next(t, a, "s", 15)[0]
	}
	last16 := next(t, a, "s", 16)[0]
	if got, _, err := a.Current(context.Background(), "s", []uint64{15, 16, 17}, false); err != nil || got[0] != last15 || got[1] != last16 || got[2] != 0 {
		t.Fatalf("a's current: %v %v, want [%d %d 0]", got, err, last15, last16)
	}
	mustBeat(t, b) // section 1 to b once a releases it
	mustBeat(t, a)
	mustBeat(t, a)
	if o, _ := st.owner("s", 1); o != "b" {
		t.Fatalf("section 1 owner %q after the release", o)
	}
	mustBeat(t, b)
	got, _, err := b.Current(context.Background(), "s", []uint64{15, 16, 17, 19}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] < last15 || got[1] < last16 || got[2] != 0 || got[3] != 0 {
		t.Fatalf("new owner's current %v: want >= %d, >= %d, then 0 for the two keys never used", got, last15, last16)
	}
	v15, v17 := next(t, b, "s", 15)[0], next(t, b, "s", 17)[0]
	if v15 <= got[0] || v17 <= 0 {
		t.Fatalf("next after current: key 15 %d (current %d), key 17 %d", v15, got[0], v17)
	}
	if cur, _, _ := b.Current(context.Background(), "s", []uint64{17}, false); cur[0] != v17 {
		t.Fatalf("key 17 current %d after next %d", cur[0], v17)
	}
}

// TestFirstUsesShareOneWrite: keys first used while a first-use write is
// in flight go into one next write (group commit), and none is answered
// before its write committed.
func TestFirstUsesShareOneWrite(t *testing.T) {
	st, _, n := oneNode(t)
	next(t, n, "s", 0) // load (records key 0 too)
	gate := make(chan struct{})
	st.mu.Lock()
	st.raiseGate = gate
	marks := st.marks
	st.mu.Unlock()
	done := make(chan int64, 9)
	for k := uint64(1); k <= 9; k++ {
		go func() { done <- next(t, n, "s", k)[0] }()
	}
	time.Sleep(20 * time.Millisecond)
	select {
	case v := <-done:
		t.Fatalf("a first use answered %d before its write committed", v)
	default:
	}
	close(gate)
	for range 9 {
		<-done
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if w := st.marks - marks; w < 1 || w > 3 {
		t.Fatalf("%d first-use writes for 9 keys, want 1-3 (group commit)", w)
	}
}

// canceledPeer answers every per-key call canceled, as connect-go reports
// a write into a connection its dead peer closed.
type canceledPeer struct {
	seqsvrv1connect.UnimplementedSeqServiceHandler
}

func (canceledPeer) NextSeqs(context.Context, *connect.Request[seqsvrv1.NextSeqsRequest]) (*connect.Response[seqsvrv1.NextSeqsResponse], error) {
	return nil, connect.NewError(connect.CodeCanceled, errors.New("write: broken pipe"))
}

// TestForwardCanceledIsUnavailable: a forward that fails canceled while
// the caller is still waiting is unavailable (retry), not canceled.
func TestForwardCanceledIsUnavailable(t *testing.T) {
	muxA, muxB := http.NewServeMux(), http.NewServeMux()
	srvA, srvB := httptest.NewServer(muxA), httptest.NewServer(muxB)
	defer srvA.Close()
	defer srvB.Close()
	_, a, b := twoNodes(t, 40, srvA.URL, srvB.URL) // sections 2,3 -> b
	serveNode(t, muxA, a)
	muxB.Handle(seqsvrv1connect.NewSeqServiceHandler(canceledPeer{}))
	mustBeat(t, a)
	mustBeat(t, b)
	mustBeat(t, a)
	mustBeat(t, a)
	mustBeat(t, b)
	_, _, err := a.Next(context.Background(), "s", []uint64{35}, false)
	wantCode(t, err, connect.CodeUnavailable)
	if !strings.Contains(err.Error(), "forward NextSeqs to b") {
		t.Fatalf("error %q does not name the forward", err)
	}
}

// Takeover (the store's cluster ID changed) stops serving at once, though
// the lease had time left, forgets every section, asks the loop for a
// heartbeat, and after the next answered heartbeat each key continues
// above its section's max_seq on the restored store (here jumped by 1000).
func TestTakeover(t *testing.T) {
	st, _, n := oneNode(t)
	before := next(t, n, "s", 1)[0]
	n.Takeover("store cluster ID changed from c1 to c2")
	_, _, err := n.Next(context.Background(), "s", []uint64{1}, false)
	wantCode(t, err, connect.CodeUnavailable)
	if !strings.Contains(err.Error(), "c2") {
		t.Fatalf("after Takeover: %v, want the reason", err)
	}
	if k := n.Status().GetSpaces()[0].GetKeysInMemory(); k != 0 || n.Status().GetLeaseValid() {
		t.Fatalf("after Takeover: %d keys in memory, lease valid %v", k, n.Status().GetLeaseValid())
	}
	select {
	case <-n.kick:
	default:
		t.Fatal("no immediate heartbeat asked for")
	}
	st.mu.Lock()
	st.spaces["s"].max[0] += 1000 // the restore's jump
	jumped := st.spaces["s"].max[0]
	st.mu.Unlock()
	mustBeat(t, n)
	if v := next(t, n, "s", 1)[0]; v <= jumped || v <= before {
		t.Fatalf("after the takeover: %d; before %d, jumped max_seq %d", v, before, jumped)
	}
}
