package segment

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// buffer is one reserved segment [first, last], first >= 1 (checkSegLocked
// refuses others). Only pos changes, and only forwards (take and NextIDs
// compare and swap), so each ID is taken exactly once without a lock. pos
// runs past MaxInt64 (wrapping negative) once a segment ending there is
// used up; every reader goes through holds or used, which read that as
// exhausted.
type buffer struct {
	pos        atomic.Int64 // next ID to hand out
	first      int64
	last       int64
	prefetchAt int64 // pos at which the next segment is reserved
}

// emptyBuffer is the buffer of a tag that has not loaded yet: always
// exhausted (first > last, so holds is false for any pos).
var emptyBuffer = func() *buffer {
	b := &buffer{first: 1, last: 0}
	b.pos.Store(1)
	return b
}()

func newBuffer(first, last int64, ratio float64) *buffer {
	size := last - first + 1
	pre := int64(math.Ceil(float64(size) * ratio))
	if pre < 1 {
		pre = 1
	}
	b := &buffer{first: first, last: last, prefetchAt: first + min(pre, size-1)}
	b.pos.Store(first)
	return b
}

// holds reports whether p, a value of pos, is an ID of b still to hand out.
func (b *buffer) holds(p int64) bool { return p >= b.first && p <= b.last }

// used is how many IDs of b have been handed out.
func (b *buffer) used() int64 {
	p := b.pos.Load()
	if p < b.first { // wrapped past MaxInt64: all of them
		return b.last - b.first + 1
	}
	return min(p-b.first, b.last-b.first+1)
}

func (b *buffer) remaining() int64 { return b.last - b.first + 1 - b.used() }

// drain makes b exhausted for good: pos moves past last (wrapping negative
// if last is MaxInt64, which holds and used read as exhausted), so every
// later take or fast-path compare and swap fails.
func (b *buffer) drain() {
	for {
		p := b.pos.Load()
		if !b.holds(p) || b.pos.CompareAndSwap(p, b.last+1) {
			return
		}
	}
}

// take hands out up to n IDs from b, a contiguous run, appended to out
// as one Range; it returns how many it took.
func (b *buffer) take(n int64, out []Range) ([]Range, int64) {
	for {
		p := b.pos.Load()
		if !b.holds(p) {
			return out, 0
		}
		k := min(n, b.last-p+1) // no overflow: first <= p <= last, first >= 1
		if b.pos.CompareAndSwap(p, p+k) {
			return appendRange(out, Range{First: p, Last: p + k - 1}), k
		}
	}
}

// tagState is the state of one tag. cur, needLoad and retryAt are read by the
// lock-free fast path; everything else is guarded by mu.
type tagState struct {
	name string
	cur  atomic.Pointer[buffer]
	// needLoad is true while no next segment is buffered and no loader
	// runs, so the fast path knows, with one load, whether to kick one.
	needLoad atomic.Bool
	// retryAt (monotonic nanos) is when the next load may start after a failure.
	retryAt atomic.Int64

	mu   sync.Mutex
	next *buffer
	// carry holds IDs taken for a request that then could not be completed
	// (the store failed mid-way through a request spanning segments), as
	// increasing ranges. They are served first, so no ID is burned. It is
	// only non-empty while cur is exhausted (next, if any, is not yet
	// current: takeLocked and loadedLocked switch only with carry empty or
	// next used up), so the fast path never overtakes it.
	carry    []Range
	loading  bool
	loadDone chan struct{} // closed and replaced when a load finishes
	removed  bool          // dropped from the tag map: the tag never existed or was deleted
	counted  bool          // in Allocator.unconfirmed (under Allocator.mu)

	step     int64 // size of the next reservation; 0 until the first load
	baseStep int64 // the tag's stored step
	sizeCap  int64 // the dynamic step grows no further (the store refused more); 0: no cap
	loaded   bool  // a segment was ever reserved
	high     int64 // last ID of the newest segment; new segments must lie above

	lastLoadAt   time.Time // wall time of the last successful reservation
	lastLoadDur  time.Duration
	lastLoadTime time.Time
	lastLoadErr  error
	failures     int
	gone         bool // the last reservation said not_found
	exhausted    bool // the last reservation of the stored step said resource_exhausted

	pendingReq  string // request_id kept across retries of one reservation
	pendingSize int64
	servedDone  int64 // IDs served from segments no longer current
}

func newTagState(name string) *tagState {
	t := &tagState{name: name, loadDone: make(chan struct{})}
	t.cur.Store(emptyBuffer)
	t.needLoad.Store(true)
	return t
}

// takeLocked takes n IDs as increasing ranges: carry first, then cur,
// then next. If it cannot complete, whatever it took goes to carry and it
// reports false.
//
// next becomes current only once the request is settled: on success, or
// on failure with next used up. Were it published (switchLocked stores cur,
// which the lock-free fast path reads) before the request knows it will
// complete, a fast-path request could take IDs of next and return while
// this one goes on to fail and puts the lower IDs of carry and the old
// segment back, for a request that starts later: an ID going backwards in
// real time (guarantee 3).
func (a *Allocator) takeLocked(t *tagState, n int64) ([]Range, bool) {
	var out []Range
	need := n
	for need > 0 && len(t.carry) > 0 {
		var k int64
		t.carry, out, k = takeCarry(t.carry, need, out)
		need -= k
	}
	if need > 0 {
		var k int64
		out, k = t.cur.Load().take(need, out)
		need -= k
	}
	if need > 0 && t.next != nil {
		if a.onNext != nil {
			a.onNext()
		}
		var k int64
		out, k = t.next.take(need, out)
		need -= k
		// Settled: either this request completes, or next is used up and
		// so holds nothing a fast-path request could take.
		a.switchLocked(t)
	}
	if need > 0 {
		if len(out) > 0 {
			t.carry = append(out, t.carry...)
		}
		return nil, false
	}
	if len(t.carry) == 0 {
		t.carry = nil
	}
	return out, true
}

// takeCarry moves up to need IDs from the front of carry to out.
func takeCarry(carry []Range, need int64, out []Range) ([]Range, []Range, int64) {
	r := carry[0]
	if r.Len() <= need {
		return carry[1:], appendRange(out, r), r.Len()
	}
	out = appendRange(out, Range{First: r.First, Last: r.First + need - 1})
	carry[0].First += need
	return carry, out, need
}

// switchLocked makes next the current segment.
func (a *Allocator) switchLocked(t *tagState) {
	if old := t.cur.Load(); old != emptyBuffer {
		t.servedDone += old.last - old.first + 1
	}
	t.cur.Store(t.next)
	t.next = nil
	if !t.loading {
		t.needLoad.Store(true)
	}
}
