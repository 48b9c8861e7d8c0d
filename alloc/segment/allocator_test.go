package segment

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/clock/clocktest"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/spec"
)

func TestSegmentPrefetchAtTenPercent(t *testing.T) {
	ctx, f, a := setup(t, "t", 0, 100, Config{})

	for want := int64(1); want <= 9; want++ {
		if id := mustNext(t, ctx, a, "t"); id != want {
			t.Fatalf("id %d, want %d", id, want)
		}
	}
	st := tagStatus(a, "t")
	if st.GetLoading() || st.GetNextReady() || f.reserves.Load() != 1 {
		t.Fatalf("after 9%% used: loading=%v next_ready=%v reserves=%d; want no prefetch yet",
			st.GetLoading(), st.GetNextReady(), f.reserves.Load())
	}

	// Hold the prefetch in the store: the current segment must keep serving.
	f.gate = make(chan struct{})
	if id := mustNext(t, ctx, a, "t"); id != 10 {
		t.Fatalf("10th id %d", id)
	}
	if st := tagStatus(a, "t"); !st.GetLoading() {
		t.Fatalf("prefetch not started at 10%% used: %v", st)
	}
	for want := int64(11); want <= 100; want++ {
		if id := mustNext(t, ctx, a, "t"); id != want {
			t.Fatalf("id %d, want %d", id, want)
		}
	}
	close(f.gate)
	// The load lands on a drained current segment and is switched in at once.
	poll.Until(t, 10*time.Second, "the load", func() bool { return !tagStatus(a, "t").GetLoading() })
	if got := f.reserves.Load(); got != 2 {
		t.Fatalf("reserves %d, want 2", got)
	}
	if id := mustNext(t, ctx, a, "t"); id != 101 {
		t.Fatalf("first id of the next segment %d, want 101", id)
	}
}

func TestSegmentSwitch(t *testing.T) {
	ctx, _, a := setup(t, "t", 1000, 10, Config{MaxStep: 1}) // pin the step to the stored 10

	mustNext(t, ctx, a, "t") // 1001, prefetch fires at once (10% of 10 is 1)
	poll.Until(t, 10*time.Second, "next segment", nextReady(a, "t"))
	st := tagStatus(a, "t")
	if st.GetCurrent().GetFirst() != 1001 || st.GetNext().GetFirst() != 1011 || st.GetPosition() != 1002 {
		t.Fatalf("status before switch: %v", st)
	}
	ids, err := a.NextIDs(ctx, "t", 9)
	if err != nil || ids[0] != 1002 || ids[8] != 1010 {
		t.Fatalf("rest of current: %v %v", ids, err)
	}
	if id := mustNext(t, ctx, a, "t"); id != 1011 {
		t.Fatalf("after switch id %d, want 1011", id)
	}
	st = tagStatus(a, "t")
	if st.GetCurrent().GetFirst() != 1011 || st.GetCurrent().GetRemaining() != 9 {
		t.Fatalf("status after switch: %v", st)
	}
}

func TestSegmentCountSpansSegments(t *testing.T) {
	ctx, f, a := setup(t, "t", 0, 100, Config{})

	if _, err := a.NextIDs(ctx, "t", 95); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "next segment", nextReady(a, "t"))
	ids, err := a.NextIDs(ctx, "t", 10)
	if err != nil {
		t.Fatal(err)
	}
	if want := idRange(96, 105); !slices.Equal(ids, want) {
		t.Fatalf("spanning ids %v, want %v", ids, want)
	}

	// A fresh tag whose step is far below the count: the request waits for
	// several loads and still gets one strictly increasing run.
	f.create("small", 0, 7)
	ids, err = a.NextIDs(ctx, "small", 40)
	if err != nil {
		t.Fatal(err)
	}
	if want := idRange(1, 40); !slices.Equal(ids, want) {
		t.Fatalf("small-step ids %v, want %v", ids, want)
	}
}

func idRange(first, last int64) []int64 {
	var r []int64
	for i := first; i <= last; i++ {
		r = append(r, i)
	}
	return r
}

func TestSegmentDynamicStep(t *testing.T) {
	ctx := testCtx(t)
	f := newFakeStore()
	f.create("t", 0, 100)
	clk := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := newTest(t, f, Config{MaxStep: 400, Clock: clk})

	// lasted is how long each segment takes before the next prefetch.
	lasted := []time.Duration{
		time.Minute, time.Minute, time.Minute, // fast: 200, 400, capped 400
		40 * time.Minute, 40 * time.Minute, 40 * time.Minute, // slow: 200, 100, never below 100
		20 * time.Minute, // in between: unchanged
	}
	mustNext(t, ctx, a, "t") // initial load, size 0 = stored step
	for _, d := range lasted {
		clk.Advance(d)
		// Take IDs until the prefetch starts (loading is set synchronously).
		for st := tagStatus(a, "t"); !st.GetLoading() && !st.GetNextReady(); st = tagStatus(a, "t") {
			if _, err := nextID(ctx, a, "t"); err != nil {
				t.Fatal(err)
			}
		}
		poll.Until(t, 10*time.Second, "next segment", nextReady(a, "t"))
		// Drain the rest so the next round starts on the new segment.
		st := tagStatus(a, "t")
		if _, err := a.NextIDs(ctx, "t", int(st.GetCurrent().GetRemaining())); err != nil {
			t.Fatal(err)
		}
		mustNext(t, ctx, a, "t") // switches the next segment in
	}
	want := []int64{0, 200, 400, 400, 200, 100, 100, 100}
	if got := f.sizesOf("t"); !slices.Equal(got, want) {
		t.Fatalf("reserved sizes %v, want %v", got, want)
	}
	if st := tagStatus(a, "t"); st.GetBaseStep() != 100 || st.GetStep() != 100 {
		t.Fatalf("status steps: %v", st)
	}
}

func TestSegmentOneLoaderPerTagAndUnique(t *testing.T) {
	ctx := testCtx(t)
	f := newFakeStore()
	f.delay = 200 * time.Microsecond // widen the window for a second loader
	tags := []string{"a", "b", "c"}
	for i, tag := range tags {
		f.create(tag, int64(i)*1_000_000, int64(5+i*6))
	}
	a := newTest(t, f, Config{})

	const workers = 16
	var mu sync.Mutex
	got := map[string][]int64{}
	var wg sync.WaitGroup
	for w := 0; w < workers*len(tags); w++ {
		tag := tags[w%len(tags)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []int64
			last := int64(-1)
			for range 150 {
				// Single IDs (a third of the calls, as most requests ask)
				// and batches share the buffers; mix them.
				n := 1 + rand.IntN(12)
				if rand.IntN(3) == 0 {
					n = 1
				}
				ids, err := a.NextIDs(ctx, tag, n)
				if err != nil {
					t.Errorf("NextIDs(%s, %d): %v", tag, n, err)
					return
				}
				if len(ids) != n {
					t.Errorf("got %d ids, want %d", len(ids), n)
					return
				}
				for _, id := range ids {
					if id <= last {
						t.Errorf("tag %s: id %d after %d: not strictly increasing", tag, id, last)
						return
					}
					last = id
				}
				mine = append(mine, ids...)
			}
			mu.Lock()
			got[tag] = append(got[tag], mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, tag := range tags {
		if m := f.maxInflight(tag); m != 1 {
			t.Errorf("tag %s: %d concurrent reservations, want 1", tag, m)
		}
		checkUnique(t, tag, got[tag], f.segments(tag))
		checkNoneBurned(t, tag, got[tag], f.segments(tag))
	}
}

// checkNoneBurned checks that ids are exactly the first len(ids) IDs of
// the reserved segments in the order they were reserved: no ID was skipped
// (segments are used up in order, so only the newest ones have IDs left).
func checkNoneBurned(t *testing.T, tag string, ids []int64, segs []*seqsvrv1.Segment) {
	t.Helper()
	sorted := slices.Clone(ids)
	slices.Sort(sorted)
	i := 0
	for _, s := range segs {
		for v := s.GetFirst(); v <= s.GetLast() && i < len(sorted); v++ {
			if sorted[i] != v {
				t.Fatalf("tag %s: id %d never handed out (next handed out: %d)", tag, v, sorted[i])
			}
			i++
		}
	}
}

// checkUnique checks ids are distinct and each lies in a committed segment.
func checkUnique(t *testing.T, tag string, ids []int64, segs []*seqsvrv1.Segment) {
	t.Helper()
	seen := make(map[int64]bool, len(ids))
	for _, id := range ids {
		if seen[id] {
			t.Fatalf("tag %s: id %d handed out twice", tag, id)
		}
		seen[id] = true
		in := false
		for _, s := range segs {
			if id >= s.GetFirst() && id <= s.GetLast() {
				in = true
				break
			}
		}
		if !in {
			t.Fatalf("tag %s: id %d in no reserved segment", tag, id)
		}
	}
}

func TestSegmentOutageDrainThenUnavailable(t *testing.T) {
	ctx, f, a := setup(t, "t", 0, 10, Config{MaxStep: 1, LoadBackoff: time.Hour, LoadBackoffMax: time.Hour})

	mustNext(t, ctx, a, "t")
	poll.Until(t, 10*time.Second, "next segment", nextReady(a, "t"))
	f.down.Store(true)

	// 9 left in the current segment, 10 in the next: all still served.
	for want := int64(2); want <= 20; want++ {
		if id := mustNext(t, ctx, a, "t"); id != want {
			t.Fatalf("id %d, want %d", id, want)
		}
	}
	_, err := nextID(ctx, a, "t")
	if !errors.Is(err, errs.Unavailable) {
		t.Fatalf("empty buffers with the store down: %v, want errs.Unavailable", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the unavailable answer used up the test's deadline")
	}
	// In backoff, requests answer at once and do not reach the store.
	before := f.reserves.Load()
	for range 1000 {
		if _, err := a.NextIDs(ctx, "t", 3); !errors.Is(err, errs.Unavailable) {
			t.Fatalf("got %v, want errs.Unavailable", err)
		}
	}
	if after := f.reserves.Load(); after != before {
		t.Fatalf("store called %d times during backoff", after-before)
	}
	if st := tagStatus(a, "t"); !strings.Contains(st.GetLastLoadError(), "down") {
		t.Fatalf("status does not show the load error: %v", st)
	}
}

func TestSegmentEmptyWaitBounded(t *testing.T) {
	ctx := testCtx(t)
	f := newFakeStore()
	f.create("t", 0, 10)
	f.gate = make(chan struct{}) // the store never answers
	a := newTest(t, f, Config{EmptyWait: 20 * time.Millisecond, LoadTimeout: time.Hour})
	_, err := nextID(ctx, a, "t")
	if !errors.Is(err, errs.Unavailable) || ctx.Err() != nil {
		t.Fatalf("hung load: %v, want errs.Unavailable before the deadline", err)
	}
}

func TestSegmentRecovery(t *testing.T) {
	ctx, f, a := setup(t, "t", 0, 10, Config{LoadBackoff: time.Millisecond, LoadBackoffMax: 5 * time.Millisecond})

	f.down.Store(true)
	if _, err := nextID(ctx, a, "t"); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("store down, nothing buffered: %v", err)
	}
	f.down.Store(false)
	var last int64
	poll.Until(t, 10*time.Second, "recovery", func() bool {
		id, err := nextID(ctx, a, "t")
		if err != nil && !errors.Is(err, errs.Unavailable) {
			t.Fatalf("unexpected error: %v", err)
		}
		last = id
		return err == nil
	})
	for range 50 {
		id := mustNext(t, ctx, a, "t")
		if id <= last {
			t.Fatalf("id %d after %d", id, last)
		}
		last = id
	}
}

func TestSegmentLostReplyReusesRequestID(t *testing.T) {
	ctx, f, a := setup(t, "t", 0, 10, Config{LoadBackoff: time.Millisecond, LoadBackoffMax: time.Millisecond})

	mustNext(t, ctx, a, "t")
	poll.Until(t, 10*time.Second, "next segment", nextReady(a, "t"))
	f.loseReply.Store(true)
	var ids []int64
	for len(ids) < 40 {
		id, err := nextID(ctx, a, "t")
		if errors.Is(err, errs.Unavailable) {
			continue // the lost reply, until the retry lands
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	// Contiguous: the segment whose reply was lost was not burned.
	if want := idRange(2, 41); !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
}

func TestSegmentUnknownTagNegativeCache(t *testing.T) {
	ctx := testCtx(t)
	f := newFakeStore()
	a := newTest(t, f, Config{NegativeCacheTTL: time.Hour})
	for range 100 {
		if _, err := a.NextIDs(ctx, "nope", 1); !errors.Is(err, errs.NotFound) {
			t.Fatalf("unknown tag: %v, want errs.NotFound", err)
		}
	}
	if n := f.reserves.Load(); n != 1 {
		t.Fatalf("store called %d times for one unknown tag, want 1", n)
	}
	if len(a.Status()) != 0 {
		t.Fatalf("unknown tag kept in the tag map: %v", a.Status())
	}
}

func TestSegmentNewTagUsableSoon(t *testing.T) {
	ctx := testCtx(t)
	f := newFakeStore()
	a := newTest(t, f, Config{NegativeCacheTTL: 20 * time.Millisecond})
	if _, err := nextID(ctx, a, "later"); !errors.Is(err, errs.NotFound) {
		t.Fatalf("got %v, want errs.NotFound", err)
	}
	f.create("later", 0, 10)
	poll.Until(t, 10*time.Second, "the new tag", func() bool {
		id, err := nextID(ctx, a, "later")
		if err != nil && !errors.Is(err, errs.NotFound) {
			t.Fatal(err)
		}
		return err == nil && id == 1
	})
	// The hot-path cache must hold the live incarnation, not the dropped one.
	if got, want := a.cache[cacheSlot("later")].Load(), a.lookup("later"); got != want {
		t.Fatal("tag cache holds a stale tag after the tag appeared")
	}
}

func TestSegmentCacheCollisions(t *testing.T) {
	ctx := testCtx(t)
	f := newFakeStore()
	// Names of equal length whose slots collide.
	var names []string
	for i := 0; len(names) < 3 && i < 100000; i++ {
		n := fmt.Sprintf("c%05d", i)
		if len(names) == 0 || cacheSlot(n) == cacheSlot(names[0]) {
			names = append(names, n)
		}
	}
	if len(names) < 3 {
		t.Fatal("no colliding names found")
	}
	for i, n := range names {
		f.create(n, int64(i)*1000, 10)
	}
	a := newTest(t, f, Config{})
	for round := int64(1); round <= 30; round++ {
		for i, n := range names {
			if id := mustNext(t, ctx, a, n); id != int64(i)*1000+round {
				t.Fatalf("tag %s round %d: id %d", n, round, id)
			}
		}
	}
}

func TestSegmentInvalidInputReservesNothing(t *testing.T) {
	ctx, f, a := setup(t, "ok", 0, 10, Config{})
	bad := []string{"", "has space", "a/b", "ü", strings.Repeat("x", 129), "tab\t", "semi;colon"}
	for _, tag := range bad {
		if _, err := a.NextIDs(ctx, tag, 1); !errors.Is(err, errs.InvalidArgument) {
			t.Errorf("tag %q: %v, want errs.InvalidArgument", tag, err)
		}
	}
	for _, n := range []int{0, -1, spec.MaxCount + 1, -1 << 40} {
		if _, err := a.NextIDs(ctx, "ok", n); !errors.Is(err, errs.InvalidArgument) {
			t.Errorf("count %d: %v, want errs.InvalidArgument", n, err)
		}
	}
	if n := f.reserves.Load(); n != 0 {
		t.Fatalf("invalid input reached the store %d times", n)
	}
	// Nothing was burned: the first valid request gets the first ID.
	if id := mustNext(t, ctx, a, "ok"); id != 1 {
		t.Fatalf("first id %d, want 1", id)
	}
	for _, tag := range []string{"A-z_0.9:x", strings.Repeat("y", 128)} {
		f.create(tag, 0, 10)
		if _, err := nextID(ctx, a, tag); err != nil {
			t.Errorf("valid tag %q refused: %v", tag, err)
		}
	}
}

func TestSegmentCloseStopsLoaders(t *testing.T) {
	ctx := testCtx(t)
	f := newFakeStore()
	f.create("t", 0, 10)
	f.gate = make(chan struct{})
	a := New(f, Config{EmptyWait: 10 * time.Millisecond, LoadTimeout: time.Hour})
	_, _ = nextID(ctx, a, "t") // leaves a load blocked in the store
	a.Close()                  // must not wait for the hour
	if _, err := nextID(ctx, a, "t"); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("after Close: %v", err)
	}
}

// Segments at the top of the int64 range: concurrent callers racing for
// the final IDs must never see pos wrap past MaxInt64 into negative IDs,
// whether the last segment ends at MaxInt64 or just below it.
func TestSegmentNearMaxInt64(t *testing.T) {
	ctx := testCtx(t)
	for _, start := range []int64{math.MaxInt64 - 8, math.MaxInt64 - 9} {
		for round := 0; round < 20; round++ {
			f := newFakeStore()
			f.create("edge", start, 4)
			a := newTest(t, f, Config{MaxStep: 4, EmptyWait: 50 * time.Millisecond})
			var mu sync.Mutex
			var got []int64
			var wg sync.WaitGroup
			for w := 0; w < 8; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 4; i++ {
						var ids []int64
						if (w+i)%2 == 0 {
							if id, err := nextID(ctx, a, "edge"); err == nil {
								ids = []int64{id}
							}
						} else if out, err := a.NextIDs(ctx, "edge", 2); err == nil {
							ids = out
						}
						mu.Lock()
						got = append(got, ids...)
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			checkUnique(t, "edge", got, f.segments("edge"))
			for _, id := range got {
				if id <= start {
					t.Fatalf("start %d: id %d handed out, below the tag's start", start, id)
				}
			}
			if len(got) != 8 {
				t.Fatalf("start %d: %d IDs handed out, want all 8 below MaxInt64 (%v)", start, len(got), got)
			}
		}
	}
}

// The allocator hands out only segments it can trust: non-empty, above
// everything it served, of its own tag, and of positive IDs.
func TestSegmentRefusesUnusableSegments(t *testing.T) {
	st := newTagState("t")
	for name, seg := range map[string]*seqsvrv1.Segment{
		"none":          nil,
		"empty":         {First: 5, Last: 4},
		"zero first":    {First: 0, Last: 10},
		"negative":      {First: -3, Last: 10},
		"other tag":     {Tag: "u", First: 1, Last: 10},
		"usable":        {Tag: "t", First: 1, Last: 10},
		"usable no tag": {First: 1, Last: math.MaxInt64},
	} {
		err := st.checkSegLocked(seg)
		if want := strings.HasPrefix(name, "usable"); (err == nil) != want {
			t.Errorf("%s: checkSegLocked = %v, want usable %v", name, err, want)
		}
	}
	st.loaded, st.high = true, 10
	if err := st.checkSegLocked(&seqsvrv1.Segment{First: 10, Last: 20}); err == nil {
		t.Error("a segment overlapping what was served was accepted")
	}
}
