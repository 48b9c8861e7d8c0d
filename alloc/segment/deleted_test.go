package segment

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// The periodic check drops a deleted tag's buffers although both still
// hold IDs and no reservation is due: the tag answers not_found within
// about one TagCheckInterval.
func TestSegmentDeletedTagDroppedByCheck(t *testing.T) {
	ctx, f, a := setup(t, "t", 0, 1000, Config{MaxStep: 1, PrefetchRatio: 0.001, TagCheckInterval: 20 * time.Millisecond, NegativeCacheTTL: time.Hour})
	mustNext(t, ctx, a, "t")
	poll.Until(t, 10*time.Second, "next segment", nextReady(a, "t"))
	reserves := f.reserves.Load()
	f.remove("t")
	start := time.Now()
	served := 0
	for {
		_, err := nextID(ctx, a, "t")
		if errors.Is(err, errs.NotFound) {
			break
		}
		if err != nil {
			t.Fatalf("after delete: %v, want IDs then not found", err)
		}
		served++
		time.Sleep(time.Millisecond)
		if time.Since(start) > 5*time.Second {
			t.Fatalf("still serving %v after the delete (%d IDs)", time.Since(start), served)
		}
	}
	if served >= 1999 {
		t.Fatalf("served %d IDs after the delete: the buffers drained instead of being dropped", served)
	}
	if tagStatus(a, "t") != nil {
		t.Fatal("a deleted tag is still in Status")
	}
	if f.reserves.Load() != reserves {
		t.Fatal("dropping the tag reserved a segment")
	}
	if _, err := nextID(ctx, a, "t"); !errors.Is(err, errs.NotFound) {
		t.Fatalf("after the drop: %v, want not found", err)
	}
}

// A reservation answering not_found drops the buffers at once, without
// the check: the next segment, already buffered, is not served.
func TestSegmentDeletedTagDroppedByReservation(t *testing.T) {
	ctx, f, a := setup(t, "t", 0, 10, Config{MaxStep: 1, TagCheckInterval: -1, NegativeCacheTTL: time.Hour})
	mustNext(t, ctx, a, "t")
	poll.Until(t, 10*time.Second, "next segment", nextReady(a, "t"))
	f.remove("t")
	for want := int64(2); want <= 10; want++ {
		if id := mustNext(t, ctx, a, "t"); id != want {
			t.Fatalf("id %d, want %d", id, want)
		}
	}
	// Switching to 11..20 starts the reservation of 21..30, which the
	// store refuses: not_found.
	if id := mustNext(t, ctx, a, "t"); id != 11 {
		t.Fatalf("id %d, want 11", id)
	}
	poll.Until(t, 10*time.Second, "the tag dropped", func() bool { return a.lookup("t") == nil })
	if id, err := nextID(ctx, a, "t"); !errors.Is(err, errs.NotFound) {
		t.Fatalf("after not_found: id %d err %v, want not found (12..20 dropped)", id, err)
	}
	if f.gets.Load() != 0 {
		t.Fatal("the check ran although TagCheckInterval is negative")
	}
}

// A tag deleted and created again (above its tombstone, as the store does)
// is served from the new life once the old buffers are dropped, strictly
// above every earlier ID.
func TestSegmentRecreatedTagContinuesAbove(t *testing.T) {
	ctx, f, a := setup(t, "t", 0, 10, Config{MaxStep: 1, TagCheckInterval: 10 * time.Millisecond, NegativeCacheTTL: 10 * time.Millisecond})
	var last int64
	for i := 0; i < 5; i++ {
		last = mustNext(t, ctx, a, "t")
	}
	poll.Until(t, 10*time.Second, "next segment", nextReady(a, "t"))
	f.remove("t")
	poll.Until(t, 10*time.Second, "the tag dropped", func() bool { return a.lookup("t") == nil })
	segs := f.segments("t")
	top := segs[len(segs)-1].GetLast()
	f.create("t", top, 10) // the store's tombstone: max(start, old max_id)
	var id int64
	poll.Until(t, 10*time.Second, "the new life served", func() bool {
		var err error
		id, err = nextID(ctx, a, "t")
		return err == nil
	})
	if id <= top || id <= last {
		t.Fatalf("first ID of the new life %d, want above %d", id, top)
	}
}

// A tag whose next segment would pass 2^63-1 answers resource_exhausted
// once its buffers are empty, not unavailable.
func TestSegmentExhaustedTag(t *testing.T) {
	ctx, _, a := setup(t, "t", math.MaxInt64-5, 5, Config{MaxStep: 1, TagCheckInterval: -1})
	for want := int64(math.MaxInt64 - 4); ; want++ {
		if id := mustNext(t, ctx, a, "t"); id != want {
			t.Fatalf("id %d, want %d", id, want)
		}
		if want == math.MaxInt64 {
			break
		}
	}
	poll.Until(t, 10*time.Second, "the refused reservation", func() bool {
		_, err := nextID(ctx, a, "t")
		return errors.Is(err, errs.ResourceExhausted)
	})
}

// A store whose --max-segment-size is below the allocator's MaxStep
// refuses a grown reservation: the allocator stops growing there and keeps
// serving, without a gap in its answers.
func TestSegmentGrowthStopsAtStoreLimit(t *testing.T) {
	f := newFakeStore()
	f.create("t", 0, 10)
	f.maxSize = 35
	a := newTest(t, f, Config{MaxStep: 1000, TagCheckInterval: -1, LoadBackoff: time.Millisecond})
	ctx := testCtx(t)
	for want := int64(1); want <= 2000; want++ {
		id, err := nextID(ctx, a, "t")
		if err != nil {
			t.Fatalf("id %d: %v", want, err)
		}
		if id <= 0 || (want > 1 && id < want) {
			t.Fatalf("id %d at call %d", id, want)
		}
	}
	for _, s := range f.sizesOf("t") {
		if s > 2*35 {
			t.Fatalf("asked for size %d after the store refused sizes above 35: %v", s, f.sizesOf("t"))
		}
	}
	sizes := f.sizesOf("t")
	if last := sizes[len(sizes)-1]; last == 0 || last > 35 {
		t.Fatalf("the dynamic size did not settle under the store's limit: %v", sizes)
	}
}

// A tag stored with a step above the store's limit (created before the
// limit was lowered) is served with its stored step (size 0), never with
// an explicit size the store refuses again and again.
func TestSegmentStoredStepAboveStoreLimit(t *testing.T) {
	f := newFakeStore()
	f.create("u", 0, 50)
	f.maxSize = 35
	a := newTest(t, f, Config{MaxStep: 1000, TagCheckInterval: -1, LoadBackoff: time.Millisecond})
	ctx := testCtx(t)
	for want := int64(1); want <= 500; want++ {
		if _, err := nextID(ctx, a, "u"); err != nil {
			t.Fatalf("id %d: %v", want, err)
		}
	}
	refused := 0
	for _, s := range f.sizesOf("u") {
		if s > 35 {
			refused++
		}
	}
	if refused > 1 {
		t.Fatalf("asked %d times for a size the store refuses: %v", refused, f.sizesOf("u"))
	}
}
