package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/poll"
)

func TestMergeIDs(t *testing.T) {
	for name, tc := range map[string]struct {
		parts [][]int64
		want  []int64
	}{
		"disjoint, out of order": {[][]int64{{20, 21}, {1, 2, 3}, nil, {10}}, []int64{1, 2, 3, 10, 20, 21}},
		"interleaved":            {[][]int64{{1, 5, 9}, {2, 3, 10}, {4}}, []int64{1, 2, 3, 4, 5, 9, 10}},
		"empty":                  {[][]int64{nil, {}}, []int64{}},
	} {
		if got := mergeIDs(tc.parts); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", name, got, tc.want)
		}
	}
}

// fakeAlloc is an allocsvr's NextIDs for unit tests: increasing ranges
// from a counter the test can move back (an allocsvr whose segment is
// behind), calls failing when fail says so, and calls held in groups of
// gate (to show a load's calls are in flight at once).
type fakeAlloc struct {
	seqsvrv1connect.UnimplementedAllocServiceHandler
	mu          sync.Mutex
	next        int64
	calls       int
	inflight    int
	maxInflight int
	gate        int
	gateMissed  bool
	served      int64
	fail        func(count int32) bool
	// ranges makes it serve NextIDRanges (as one range, or two with a gap
	// of gap IDs between them when gap > 0); without it NextIDRanges
	// answers unimplemented, as an allocsvr from before it does.
	ranges     bool
	gap        int64
	rangeCalls int
}

func (f *fakeAlloc) NextIDRanges(ctx context.Context, req *connect.Request[seqsvrv1.NextIDRangesRequest]) (*connect.Response[seqsvrv1.NextIDRangesResponse], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rangeCalls++
	if !f.ranges {
		return f.UnimplementedAllocServiceHandler.NextIDRanges(ctx, req)
	}
	n := int64(req.Msg.GetCount())
	var out []*seqsvrv1.IDRange
	if f.gap > 0 && n > 1 {
		half := n / 2
		out = append(out, &seqsvrv1.IDRange{First: f.next, Last: f.next + half - 1})
		f.next += half + f.gap
		n -= half
	}
	out = append(out, &seqsvrv1.IDRange{First: f.next, Last: f.next + n - 1})
	f.next += n
	f.served += int64(req.Msg.GetCount())
	return connect.NewResponse(&seqsvrv1.NextIDRangesResponse{Ranges: out}), nil
}

func (f *fakeAlloc) NextIDs(ctx context.Context, req *connect.Request[seqsvrv1.NextIDsRequest]) (*connect.Response[seqsvrv1.NextIDsResponse], error) {
	f.mu.Lock()
	f.calls++
	// Calls come in groups of gate (one load's): each waits for the
	// rest of its group.
	groupEnd := f.calls
	if f.gate > 0 {
		groupEnd = (f.calls + f.gate - 1) / f.gate * f.gate
	}
	f.inflight++
	f.maxInflight = max(f.maxInflight, f.inflight)
	f.mu.Unlock()
	defer func() { f.mu.Lock(); f.inflight--; f.mu.Unlock() }()
	// The wait is generous (the group's calls are sent at once, but a
	// loaded machine may start one late); once a group missed it, later
	// calls do not wait, so a client that sends a load's calls one by one
	// fails the test in one wait instead of one per call.
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		f.mu.Lock()
		ok := f.calls >= groupEnd || f.gateMissed
		f.mu.Unlock()
		if ok || ctx.Err() != nil {
			break
		}
		if time.Now().After(end) {
			f.mu.Lock()
			f.gateMissed = true
			f.mu.Unlock()
			break
		}
	}
	if f.fail != nil && f.fail(req.Msg.GetCount()) {
		return nil, connect.NewError(connect.CodeNotFound, nil)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	ids := make([]int64, req.Msg.GetCount())
	for i := range ids {
		ids[i] = f.next + int64(i)
	}
	f.next += int64(len(ids))
	f.served += int64(len(ids))
	return connect.NewResponse(&seqsvrv1.NextIDsResponse{Ids: ids}), nil
}

func (f *fakeAlloc) get() (calls, maxInflight int, gateMissed bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls, f.maxInflight, f.gateMissed
}

func startFake(t *testing.T, f *fakeAlloc, size int) *Client {
	t.Helper()
	path, h := seqsvrv1connect.NewAllocServiceHandler(f)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	// Attempts get far more than the fake's gate wait: an attempt cut short
	// on a loaded machine would be retried and break the fake's grouping.
	c, err := New([]string{srv.URL}, WithLocalBuffer(size), WithAttemptTimeout(time.Minute), WithTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// A buffer above MaxCount loads each batch with ceil(size/MaxCount)
// concurrent calls; IDs stay unique and increasing per goroutine.
func TestLocalBufferLargeBatches(t *testing.T) {
	f := &fakeAlloc{next: 1, gate: 3}
	const size, workers, each = 25_000, 4, 20_000
	c := startFake(t, f, size)
	got := make([][]int64, workers)
	var wg sync.WaitGroup
	errc := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				id, err := c.NextID(context.Background(), "t")
				if err != nil {
					errc <- err
					return
				}
				got[w] = append(got[w], id)
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	CheckUniqueIncreasing(t, got)
	// The refill started last may still be in flight: let it end.
	var calls, inflight int
	var missed bool
	poll.Until(t, 30*time.Second, "the last refill's three calls", func() bool {
		calls, inflight, missed = f.get()
		return calls%3 == 0
	})
	t.Logf("calls %d inflight %d missed %v", calls, inflight, missed)
	if calls%3 != 0 || calls < 3*(workers*each/size) {
		t.Fatalf("%d calls for %d IDs: want 3 per batch of %d", calls, workers*each, size)
	}
	if inflight != 3 || missed {
		t.Fatalf("a load's calls were not all in flight at once: at most %d (gate missed: %v)", inflight, missed)
	}
}

// After a failover to an allocsvr whose segment is behind, a large
// batch's IDs not above every ID already loaded are dropped.
func TestLocalBufferLargeBehind(t *testing.T) {
	f := &fakeAlloc{next: 1}
	const size = 25_000
	c := startFake(t, f, size)
	ctx := context.Background()
	var last int64
	for i := range 120_000 {
		if i == 30_000 {
			f.mu.Lock()
			f.next -= 40_000 // the next loads come back below
			f.mu.Unlock()
		}
		id, err := c.NextID(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if id <= last {
			t.Fatalf("ID %d after %d", id, last)
		}
		last = id
	}
	f.mu.Lock()
	served := f.served
	f.mu.Unlock()
	if kept := int64(120_000 + c.Buffered("t")); served-kept < 30_000 {
		t.Fatalf("%d IDs served, %d taken or buffered: the rewound range was not dropped", served, kept)
	}
}

// A load whose calls partly fail installs what the others got; one
// whose calls all fail reports the error to the caller.
func TestLocalBufferLargePartial(t *testing.T) {
	f := &fakeAlloc{next: 1, fail: func(count int32) bool { return count == 5000 }}
	c := startFake(t, f, 25_000)
	ctx := context.Background()
	if _, err := c.NextID(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if n := c.Buffered("t"); n != 20_000-1 {
		t.Fatalf("%d IDs buffered after a load whose call for 5000 failed, want 19999", n)
	}
	f2 := &fakeAlloc{next: 1, fail: func(int32) bool { return true }}
	c2 := startFake(t, f2, 25_000)
	if _, err := c2.NextID(ctx, "t"); Code(err) != connect.CodeNotFound {
		t.Fatalf("every call failed: got %v, want not_found", err)
	}
}

// An allocsvr that serves NextIDRanges fills each load with one call,
// whatever the size, and a load of two ranges is handed out in order
// across the gap.
func TestLocalBufferRanges(t *testing.T) {
	f := &fakeAlloc{next: 1, ranges: true, gap: 7}
	const size = MaxLocalBuffer
	c := startFake(t, f, size)
	ctx := context.Background()
	var last int64
	for range 3 * size {
		id, err := c.NextID(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if id <= last {
			t.Fatalf("ID %d after %d", id, last)
		}
		if id != last+1 && id != last+8 && last != 0 {
			t.Fatalf("ID %d after %d: skipped IDs other than the gap", id, last)
		}
		last = id
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls != 0 || f.rangeCalls < 3 || f.rangeCalls > 4 {
		t.Fatalf("%d NextIDs and %d NextIDRanges calls for 3 loads, want 0 and one per load", f.calls, f.rangeCalls)
	}
}

// An allocsvr from before NextIDRanges answers it unimplemented: the
// client loads with NextIDs instead, and asks NextIDRanges again only
// after rangesRetry.
func TestLocalBufferFallsBackToNextIDs(t *testing.T) {
	f := &fakeAlloc{next: 1}
	c := startFake(t, f, 25_000)
	ctx := context.Background()
	var last int64
	for range 60_000 {
		id, err := c.NextID(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if id <= last {
			t.Fatalf("ID %d after %d", id, last)
		}
		last = id
	}
	calls, _, _ := f.get()
	f.mu.Lock()
	rangeCalls := f.rangeCalls
	f.mu.Unlock()
	if rangeCalls != 1 || calls < 3*3 {
		t.Fatalf("%d NextIDRanges and %d NextIDs calls: want 1 (then NextIDs for a while) and 3 per load", rangeCalls, calls)
	}
	// Once rangesRetry has passed (moved here by hand), an upgraded
	// allocsvr is used with NextIDRanges again.
	f.mu.Lock()
	f.ranges = true
	f.mu.Unlock()
	c.rangesOffUntil.Store(0)
	for range 60_000 {
		if _, err := c.NextID(ctx, "t"); err != nil {
			t.Fatal(err)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.rangeCalls < 2 {
		t.Fatalf("NextIDRanges not asked again after rangesRetry: %d calls", f.rangeCalls)
	}
}

func TestRangeHelpers(t *testing.T) {
	if got, want := toRanges([]int64{1, 2, 3, 7, 9, 10}), []idRange{{1, 3}, {7, 7}, {9, 10}}; !slices.Equal(got, want) {
		t.Errorf("toRanges: %v, want %v", got, want)
	}
	if got := toRanges(nil); len(got) != 0 {
		t.Errorf("toRanges(nil): %v", got)
	}
	for _, tc := range []struct {
		in   []idRange
		high int64
		want []idRange
	}{
		{[]idRange{{1, 3}, {7, 9}}, 0, []idRange{{1, 3}, {7, 9}}},
		{[]idRange{{1, 3}, {7, 9}}, 2, []idRange{{3, 3}, {7, 9}}},
		{[]idRange{{1, 3}, {7, 9}}, 5, []idRange{{7, 9}}},
		{[]idRange{{1, 3}, {7, 9}}, 9, nil},
	} {
		if got := above(slices.Clone(tc.in), tc.high); !slices.Equal(got, tc.want) {
			t.Errorf("above(%v, %d): %v, want %v", tc.in, tc.high, got, tc.want)
		}
	}
	// The trigger sits in the batch holding the load's 10% point.
	bs := newBatches([]idRange{{1, 5}, {11, 100}})
	if bs[0].trigger != -1 || bs[1].trigger != 4 || bs[1].id(4) != 15 {
		t.Errorf("triggers %d, %d: want -1 and 4 (ID 15, the 10th of 95)", bs[0].trigger, bs[1].trigger)
	}
}
