package seq

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/clock/clocktest"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// The one-key path answers what Next and Current answer for one key: the
// same values in turn, the same errors word for word.
func TestOneKeyLikeBatch(t *testing.T) {
	_, _, n := oneNode(t)
	ctx := context.Background()
	for i, key := range []uint64{3, 3, 15, 3, 19, 0} {
		var v int64
		var ver uint64
		var err error
		switch i % 3 {
		case 0:
			v, ver, err = n.NextSeq(ctx, "s", key, false)
		case 1:
			v, ver, err = n.NextSeqHere(ctx, "s", key)
		default:
			v, ver, err = n.NextSeq(ctx, "s", key, true)
		}
		if err != nil || ver != n.loadTables()["s"].version() {
			t.Fatalf("key %d: %d, version %d, %v", key, v, ver, err)
		}
		got, _, err := n.Current(ctx, "s", []uint64{key}, false)
		if err != nil || got[0] != v {
			t.Fatalf("key %d: one-key path gave %d, Current reads %v (%v)", key, v, got, err)
		}
		if c, _, err := n.CurrentSeq(ctx, "s", key, false); err != nil || c != v {
			t.Fatalf("key %d: CurrentSeq %d (%v), want %d", key, c, err, v)
		}
		if w := next(t, n, "s", key)[0]; w != v+1 {
			t.Fatalf("key %d: Next after the one-key path gave %d, want %d", key, w, v+1)
		}
	}
	for _, tc := range []struct {
		space string
		key   uint64
	}{{"nope", 0}, {"s", 20}, {"s", 1 << 63}, {"a b", 0}, {"", 0}} {
		_, _, want := n.Next(ctx, tc.space, []uint64{tc.key}, false)
		_, _, got := n.NextSeq(ctx, tc.space, tc.key, false)
		_, _, here := n.NextSeqHere(ctx, tc.space, tc.key)
		_, _, cur := n.CurrentSeq(ctx, tc.space, tc.key, false)
		if want == nil || got == nil || got.Error() != want.Error() || here.Error() != want.Error() || cur.Error() != want.Error() ||
			errs.Code(got) != errs.Code(want) {
			t.Fatalf("%q key %d: NextSeq %v, NextSeqHere %v, CurrentSeq %v; Next %v", tc.space, tc.key, got, here, cur, want)
		}
	}
	n.Close()
	if _, _, err := n.NextSeq(ctx, "s", 3, false); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

func TestOneKeyNoAllocation(t *testing.T) {
	c := clocktest.New(t0)
	st := newFakeStore(c)
	st.createSpace("s", 20, 10, 1_000_000) // a step no run here reaches: no raise
	n := newNode(t, st, c, "a", "http://a")
	mustBeat(t, n)
	ctx := context.Background()
	next(t, n, "s", 4) // the load
	for name, call := range map[string]func(){
		"NextSeq":     func() { _, _, _ = n.NextSeq(ctx, "s", 4, false) },
		"NextSeqHere": func() { _, _, _ = n.NextSeqHere(ctx, "s", 4) },
		"CurrentSeq":  func() { _, _, _ = n.CurrentSeq(ctx, "s", 4, false) },
	} {
		if a := testing.AllocsPerRun(100, call); a != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, a)
		}
	}
}

// A key of another allocsvr's section: NextSeq forwards it (once, marked
// forwarded), NextSeqHere declines it with ErrNotOwner and takes nothing,
// and a forwarded NextSeq is refused.
func TestOneKeyForwardOrDecline(t *testing.T) {
	muxA, muxB := http.NewServeMux(), http.NewServeMux()
	srvA, srvB := httptest.NewServer(muxA), httptest.NewServer(muxB)
	defer srvA.Close()
	defer srvB.Close()
	c := clocktest.New(t0)
	st := newFakeStore(c)
	st.createSpace("s", 40, 10, 10) // sections 0,1 -> a; 2,3 -> b
	a, b := newNode(t, st, c, "a", srvA.URL), newNode(t, st, c, "b", srvB.URL)
	serveNode(t, muxA, a)
	serveNode(t, muxB, b)
	for _, n := range []*Node{a, b, a, a, b} {
		mustBeat(t, n)
	}
	ctx := context.Background()
	if _, _, err := a.NextSeqHere(ctx, "s", 35); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("NextSeqHere of b's key on a: %v, want ErrNotOwner", err)
	}
	if a.forwards.Load() != 0 {
		t.Fatal("NextSeqHere forwarded")
	}
	_, _, err := a.NextSeq(ctx, "s", 35, true)
	wantCode(t, err, errs.Code(ErrClosed)) // unavailable, not forwarded again
	v, ver, err := a.NextSeq(ctx, "s", 35, false)
	if err != nil || v != 1 || ver == 0 || a.forwards.Load() != 1 {
		t.Fatalf("forwarded NextSeq: %d, version %d, %v, %d forwards; want 1 after one forward", v, ver, err, a.forwards.Load())
	}
	if cur, _, err := b.CurrentSeq(ctx, "s", 35, false); err != nil || cur != 1 {
		t.Fatalf("b's key 35 at %d (%v) after one forwarded NextSeq and a declined one", cur, err)
	}
	if cur, _, err := b.CurrentSeq(ctx, "s", 5, false); err != nil || cur != 0 {
		t.Fatalf("CurrentSeq forwarded from b: %d, %v", cur, err)
	}
}

// dirMatches fails unless the directory of space s in the current table
// holds exactly the sections the map holds.
func dirMatches(t *testing.T, n *Node) {
	t.Helper()
	n.mu.RLock()
	defer n.mu.RUnlock()
	tb := n.loadTables()["s"]
	if tb.dir == nil || tb.dir != n.dirs["s"] {
		t.Fatalf("table's directory %p, node's %p", tb.dir, n.dirs["s"])
	}
	for sec := range uint64(len(tb.dir.secs)) {
		if got, want := tb.dir.get(sec), n.sections[secKey{"s", sec}]; got != want {
			t.Fatalf("section %d: directory %p, map %p", sec, got, want)
		}
	}
}

// The one-key path finds sections through the directory: it must follow
// loads, lapses (a new lease generation reloads above the committed
// max_seq) and handovers as the map does.
func TestOneKeyDirectory(t *testing.T) {
	st, a, b := twoNodes(t, 20, "http://a", "http://b")
	ctx := context.Background()
	c := a.clock.(*clocktest.Fake)
	mustBeat(t, a)
	dirMatches(t, a)
	first, _, err := a.NextSeq(ctx, "s", 15, false) // loads section 1
	if err != nil {
		t.Fatal(err)
	}
	dirMatches(t, a)
	if a.loadTables()["s"].dir.get(1) == nil {
		t.Fatal("loaded section 1 not in the directory")
	}

	c.Advance(5 * time.Second) // lapsed; not dropped yet (no loop)
	_, _, err = a.NextSeq(ctx, "s", 15, false)
	wantCode(t, err, errs.Code(ErrClosed))
	limit := st.maxSeq("s", 1)
	mustBeat(t, a) // a new generation: the old memory is dropped
	dirMatches(t, a)
	if v, _, err := a.NextSeq(ctx, "s", 15, false); err != nil || v <= limit || v <= first {
		t.Fatalf("after the lapse: %d, %v; want above max_seq %d", v, err, limit)
	}
	dirMatches(t, a)

	mustBeat(t, b) // section 1 goes to b, pending a's release
	mustBeat(t, a) // a drops it
	dirMatches(t, a)
	if _, _, err := a.NextSeqHere(ctx, "s", 15); errs.Code(err) != errs.Code(ErrClosed) || errors.Is(err, ErrNotOwner) {
		t.Fatalf("a during the handover: %v, want unavailable (moving)", err)
	}
	mustBeat(t, a) // released
	mustBeat(t, b)
	if _, _, err := a.NextSeqHere(ctx, "s", 15); !errors.Is(err, ErrNotOwner) {
		t.Fatalf("a after the handover: %v, want ErrNotOwner", err)
	}
	dirMatches(t, a)
	if v, _, err := a.NextSeq(ctx, "s", 5, false); err != nil || v != 1 {
		t.Fatalf("a's own section 0: %d, %v", v, err)
	}
	dirMatches(t, a)
}
