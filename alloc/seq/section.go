package seq

import (
	"context"
	"fmt"
	"sync"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// section is the memory of one section this Node serves: a cur_seq per
// key (0 = at base), allocated by the first load. A key's value is
// max(base, cur[i]) once it is in the durable used-set, 0 before (it was
// never handed a value, by this owner or any earlier one); no value above
// limit, the committed max_seq, is ever handed out.
type section struct {
	key  secKey
	gen  uint64 // the lease generation it was created under
	size int    // keys in the section

	mu      sync.Mutex
	cur     []int64 // nil until loaded
	base    int64   // prev_max answered by the load
	limit   int64   // committed max_seq
	high    int64   // highest value handed out (>= base)
	step    int64   // how far one raise moves limit
	dropped bool
	raising *raise // the raise in flight, nil if none

	// The durable used-set as loaded plus this owner's committed first
	// uses (bit i%8 of byte i/8), or allUsed (a section raised before the
	// store kept used-sets). A key's first value waits until its bit is
	// committed (group commit: pending collects the offsets of the next
	// write while one is in flight), so a later owner never reads 0 for a
	// key that was handed a value.
	used    []byte
	allUsed bool
	pending []uint32
	marking *raise
}

// isUsed reports whether key offset i is in the durable used-set.
func (s *section) isUsed(i int) bool {
	return s.allUsed || s.used[i>>3]&(1<<(i&7)) != 0
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

func (s *section) loaded() bool { return s.cur != nil }

// drop frees the memory; calls holding s refuse from now on.
func (s *section) drop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropped = true
	s.cur, s.used, s.pending = nil, nil, nil
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
			if s.limit <= s.base { // no value to give yet: raise first
				goto wait
			}
			// Its first value: record the key as used first.
			s.pending = append(s.pending, uint32(i))
			if s.marking == nil {
				n.startMark(s)
			}
			r := s.marking
			s.mu.Unlock()
			if err := waitFor(ctx, r, s, "the key's first use not recorded"); err != nil {
				return 0, err
			}
			s.mu.Lock()
			continue
		}
		if s.loaded() {
			v := max(s.base, s.cur[i])
			if o == opCurrent {
				s.mu.Unlock()
				return v, nil
			}
			if v < s.limit { // never past the committed max_seq (nor 2^63-1)
				v++
				s.cur[i] = v
				s.high = max(s.high, v)
				if s.raising == nil && (s.limit-s.high)*raiseAheadDen < s.step*raiseAheadNum {
					n.startRaise(s)
				}
				s.mu.Unlock()
				return v, nil
			}
		}
	wait:
		if o == opNext && !s.loaded() {
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
