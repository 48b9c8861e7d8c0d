package segment

import (
	"errors"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// TestCarryNotOvertakenByFastPath replays, step by step, the interleaving
// that broke guarantee 3 under TestSegmentMonotonicUnderFlappingStore: a
// slow request R takes the tail of the current segment, moves on to the
// next one, and fails for want of a third; meanwhile a fast-path request F
// takes IDs of that next segment and returns. R's IDs go to carry and are
// handed to a request G that starts after F returned: G must not get IDs
// below F's.
func TestCarryNotOvertakenByFastPath(t *testing.T) {
	ctx, f, a := setup(t, "t", 0, 7, Config{
		MaxStep: 1, EmptyWait: time.Second,
		LoadBackoff: time.Millisecond, LoadBackoffMax: time.Millisecond,
	})
	if got := mustNext(t, ctx, a, "t"); got != 1 { // segment [1, 7]; kicks [8, 14]
		t.Fatalf("first id %d, want 1", got)
	}
	poll.Until(t, 10*time.Second, "the next segment buffered", nextReady(a, "t"))
	if ids, err := a.NextIDs(ctx, "t", 3); err != nil || ids[0] != 2 { // 5..7 left
		t.Fatalf("NextIDs(3) = %v, %v", ids, err)
	}
	f.down.Store(true) // no third segment: R cannot complete

	ts := a.lookup("t")
	var fast []int64 // F's answer, taken while R is between the segments
	a.onNext = func() {
		a.onNext = nil
		// The fast path's compare and swap on cur, without its kick of a
		// load (which would wait for the lock R holds).
		if rs, k := ts.cur.Load().take(2, nil); k == 2 {
			fast = []int64{rs[0].First, rs[0].Last}
		}
	}
	if ids, err := a.NextIDs(ctx, "t", 20); !errors.Is(err, errs.Unavailable) { // R
		t.Fatalf("NextIDs(20) with the store down = %v, %v; want unavailable", ids, err)
	}
	f.down.Store(false)

	var g []int64 // G, started after F returned
	poll.Until(t, 10*time.Second, "a request served after the store is back", func() bool {
		ids, err := a.NextIDs(ctx, "t", 1)
		if err == nil {
			g = ids
		}
		return err == nil
	})
	if len(fast) > 0 && g[0] <= fast[1] {
		t.Fatalf("id %d handed out after an earlier request already returned %v", g[0], fast)
	}
	// Nothing is burned: R's IDs come next, in order.
	want := int64(5)
	if len(fast) > 0 {
		want = fast[1] + 1
	}
	if g[0] != want {
		t.Fatalf("G got %d, want %d (fast path took %v)", g[0], want, fast)
	}
}
