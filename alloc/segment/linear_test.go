package segment

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// op is one successful request, with its place in a global order of
// call starts and returns.
type op struct {
	start, end int64
	ids        []int64
}

// TestSegmentMonotonicUnderFlappingStore checks guarantee 3 in real time,
// not just per goroutine: if request A returned before request B started,
// every ID of A is below every ID of B. The store flaps so that requests
// span segments, wait, time out and leave IDs in carry. Half the callers
// use NextIDRanges, so the two calls are checked against each other.
//
// Each caller makes at least 300 requests and goes on until both paths
// were taken often enough (answers and unavailable): with the flapping
// driven by timers, a loaded machine can leave the store down (or up)
// for all of a fixed number of requests, which fail fast in backoff.
func TestSegmentMonotonicUnderFlappingStore(t *testing.T) {
	const (
		minOps  = 300 // per caller
		maxOps  = 30 * minOps
		minEach = 100 // answers, and unavailable, over all callers
		// runFor bounds the extra requests; requests themselves get more
		// (ctx), so none is cut short by the test's deadline.
		runFor = time.Minute
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*runFor)
	defer cancel()
	until := time.Now().Add(runFor)
	f := newFakeStore()
	f.create("t", 0, 7)
	a := newTest(t, f, Config{
		MaxStep: 1, EmptyWait: 3 * time.Millisecond,
		LoadBackoff: time.Millisecond, LoadBackoffMax: 2 * time.Millisecond,
	})

	stop := make(chan struct{})
	var flapper sync.WaitGroup
	flapper.Add(1)
	go func() {
		defer flapper.Done()
		for {
			select {
			case <-stop:
				f.down.Store(false)
				return
			case <-time.After(time.Duration(rand.IntN(3000)) * time.Microsecond):
				f.down.Store(!f.down.Load())
			}
		}
	}()

	var clock atomic.Int64
	var mu sync.Mutex
	var ops []op
	var answers, unavailable atomic.Int64
	enough := func(i int) bool {
		return i >= minOps && (answers.Load() >= minEach && unavailable.Load() >= minEach || i >= maxOps || time.Now().After(until))
	}
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !enough(i); i++ {
				n := 1 + rand.IntN(20)
				start := clock.Add(1)
				var ids []int64
				var rs []Range
				var err error
				if g%2 == 0 {
					ids, err = a.NextIDs(ctx, "t", n)
				} else if rs, err = a.NextIDRanges(ctx, "t", n); err == nil {
					ids = expand(rs, n)
				}
				end := clock.Add(1)
				if errors.Is(err, errs.Unavailable) {
					unavailable.Add(1)
					continue
				}
				if err != nil {
					t.Errorf("NextIDs: %v", err)
					return
				}
				if len(ids) != n || rs != nil && !joined(rs) {
					t.Errorf("asked %d, got %v (ranges %v)", n, ids, rs)
					return
				}
				answers.Add(1)
				mu.Lock()
				ops = append(ops, op{start, end, ids})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(stop)
	flapper.Wait()

	var all []int64
	for _, op := range ops {
		for i := 1; i < len(op.ids); i++ {
			if op.ids[i] <= op.ids[i-1] {
				t.Fatalf("one answer not strictly increasing: %v", op.ids)
			}
		}
		all = append(all, op.ids...)
	}
	checkUnique(t, "t", all, f.segments("t"))

	// Real-time order: sort by end; the largest ID of everything that ended
	// before B started must be below B's smallest.
	sort.Slice(ops, func(i, j int) bool { return ops[i].end < ops[j].end })
	ends := make([]int64, len(ops))
	prefixMax := make([]int64, len(ops))
	for i, op := range ops {
		ends[i] = op.end
		prefixMax[i] = op.ids[len(op.ids)-1]
		if i > 0 {
			prefixMax[i] = max(prefixMax[i], prefixMax[i-1])
		}
	}
	for _, b := range ops {
		k := sort.Search(len(ends), func(i int) bool { return ends[i] >= b.start }) // ops[:k] ended before b started
		if k > 0 && prefixMax[k-1] >= b.ids[0] {
			t.Fatalf("id %d handed out after an earlier request already returned %d", b.ids[0], prefixMax[k-1])
		}
	}
	t.Logf("%d answers, %d ids, %d unavailable, %d reservations", len(ops), len(all), unavailable.Load(), f.reserves.Load())
	if len(ops) < minEach || unavailable.Load() < minEach {
		t.Fatalf("the test did not exercise both paths: %d answers, %d unavailable, want %d each", len(ops), unavailable.Load(), minEach)
	}
}

// joined reports whether rs are increasing with a gap between each two.
func joined(rs []Range) bool {
	for i := 1; i < len(rs); i++ {
		if rs[i].First <= rs[i-1].Last+1 {
			return false
		}
	}
	return true
}
