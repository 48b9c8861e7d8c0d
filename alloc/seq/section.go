package seq

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// section is the memory of one section this Node serves: a cur_seq per
// key (0 = at base), allocated by the first load. A key's value is
// max(base, cur[i]) once it is in the durable used-set, 0 before (it was
// never handed a value, by this owner or any earlier one); no value above
// limit, the committed max_seq, is ever handed out.
//
// NextSeq of a used key takes its value without the mutex (fastNext): a
// compare-and-swap on cur[i] against limit. Everything else (loads,
// raises, first uses, CurrentSeqs, waiting) runs under mu. cur, used and
// base are set once by the load, before live becomes true, and never
// replaced (a dropped section is forgotten, never reloaded); cur's
// elements and used's words are read and written atomically.
type section struct {
	key  secKey
	gen  uint64 // the lease generation it was created under
	size int    // keys in the section

	live    atomic.Bool  // loaded and not dropped: fastNext may serve
	limit   atomic.Int64 // committed max_seq (written under mu)
	raiseAt atomic.Int64 // a value above it starts a raise ahead; MaxInt64 while one runs

	mu      sync.Mutex
	cur     []int64 // nil until loaded
	base    int64   // prev_max answered by the load
	step    int64   // how far one raise moves limit
	dropped bool
	raising *raise // the raise in flight, nil if none

	// The durable used-set as loaded plus this owner's committed first
	// uses (bit i%64 of word i/64), or allUsed (a section raised before
	// the store kept used-sets). A key's first value waits until its bit
	// is committed (group commit per space, marks.go), so a later owner
	// never reads 0 for a key that was handed a value. pending is the
	// first uses the section's load (or raise in flight) records.
	used    []uint64
	allUsed bool
	pending []uint32
}

// isUsed reports whether key offset i is in the durable used-set.
func (s *section) isUsed(i int) bool {
	return s.allUsed || atomic.LoadUint64(&s.used[i>>6])&(1<<(i&63)) != 0
}

// raise is one RaiseSections in flight for a section; done closes when
// it ended, err says how.
type raise struct {
	done chan struct{}
	err  error
}

// raiseAhead: a section raises in the background once less than this
// part of a step is left above the highest value handed out (the 10%
// rule: raise after a tenth of a step was used), so calls rarely wait.
const raiseAheadNum, raiseAheadDen = 9, 10

// setRaiseAt arms the raise-ahead threshold for the current limit (mu
// held, no raise in flight): a value above limit - 90% of a step.
func (s *section) setRaiseAt() {
	ahead := s.step/raiseAheadDen*raiseAheadNum + (s.step%raiseAheadDen*raiseAheadNum+raiseAheadDen-1)/raiseAheadDen // ceil(90% of step)
	s.raiseAt.Store(s.limit.Load() - ahead)
}

func (s *section) loaded() bool { return s.cur != nil }

// drop stops s for good; calls holding s refuse from now on. Its memory
// goes with s once the Node forgot it.
func (s *section) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live.Store(false)
	s.dropped = true
	s.pending = nil
}

// fastNext is NextSeq of key offset i without the mutex, when nothing
// but a compare-and-swap is needed: s live under the current, valid
// lease, the key already used, the next value within limit. ok false
// means take must serve the call (nothing was taken).
//
// The lease is checked before the swap, as take checks it before the
// increment, so a call that begins after this Node fenced itself is never
// served; one that began before may be, which guarantee 8 allows (it is
// concurrent with whatever the next owner answers after the fence).
func (n *Node) fastNext(s *section, i int) (int64, bool) {
	if !s.live.Load() || !s.isUsed(i) || n.closed.Load() {
		return 0, false
	}
	if l := n.lease.Load(); s.gen != l.gen || n.monoNs() >= l.fenceNs {
		return 0, false
	}
	p := &s.cur[i]
	for {
		c := atomic.LoadInt64(p)
		v := max(s.base, c)
		if v >= s.limit.Load() { // never past the committed max_seq (nor 2^63-1)
			return 0, false
		}
		if atomic.CompareAndSwapInt64(p, c, v+1) {
			if v+1 > s.raiseAt.Load() {
				n.raiseAhead(s)
			}
			return v + 1, true
		}
	}
}

// raiseAhead starts the background raise fastNext asked for, unless one
// runs already.
func (n *Node) raiseAhead(s *section) {
	s.mu.Lock()
	if s.raising == nil && s.live.Load() {
		n.startRaise(s)
	}
	s.mu.Unlock()
}

// op is what a call does with one key.
type op int

const (
	opNext    op = iota // hand out the next value
	opCurrent           // read the value, never increment
)

// take serves key offset i of s: the next value (opNext) or the current
// one (opCurrent), loading the section or waiting for a raise as needed,
// as long as ctx allows.
func (n *Node) take(ctx context.Context, s *section, i int, o op) (int64, error) {
	if o == opNext {
		if v, ok := n.fastNext(s, i); ok {
			return v, nil
		}
	}
	s.mu.Lock()
	for {
		if err := n.serving(s); err != nil {
			s.mu.Unlock()
			return 0, err
		}
		if s.loaded() && !s.isUsed(i) {
			if o == opCurrent { // never handed a value, by anyone
				s.mu.Unlock()
				return 0, nil
			}
			// Its first value: record the key as used first, in its
			// space's next write of first uses (marks.go).
			s.mu.Unlock()
			if err := waitMark(ctx, n.markFirstUse(s, i), s); err != nil {
				return 0, err
			}
			s.mu.Lock()
			continue
		}
		if s.loaded() {
			p := &s.cur[i]
			c := atomic.LoadInt64(p)
			v := max(s.base, c)
			if o == opCurrent {
				s.mu.Unlock()
				return v, nil
			}
			if v < s.limit.Load() { // never past the committed max_seq (nor 2^63-1)
				// fastNext may move the key meanwhile: swap, never store.
				if !atomic.CompareAndSwapInt64(p, c, v+1) {
					continue
				}
				if s.raising == nil && v+1 > s.raiseAt.Load() {
					n.startRaise(s)
				}
				s.mu.Unlock()
				return v + 1, nil
			}
		} else if o == opNext {
			s.pending = append(s.pending, uint32(i)) // the load records it
		}
		if s.raising == nil {
			n.startRaise(s)
		}
		r := s.raising
		s.mu.Unlock()
		if err := waitFor(ctx, r, s, "max_seq not raised"); err != nil {
			return 0, err
		}
		s.mu.Lock()
	}
}

// waitFor waits until the store write r ended, within ctx.
func waitFor(ctx context.Context, r *raise, s *section, what string) error {
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return fmt.Errorf("%w: section %d of space %q: %s within the call's deadline: %v", errs.Unavailable, s.key.section, s.key.space, what, ctx.Err())
	}
}
