package seq

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// startRaise begins s's load (first use) or raise in the background (s.mu
// held, no raise in flight).
func (n *Node) startRaise(s *section) {
	r := &raise{done: make(chan struct{})}
	s.raising = r
	known := int64(-1)
	if s.loaded() {
		known = s.limit.Load()
	}
	s.raiseAt.Store(math.MaxInt64) // no second raise while this one runs
	// First uses waiting ride along: the load or raise records them too.
	offs := s.pending
	s.pending = nil
	go n.runRaise(s, r, known, offs)
}

// runRaise asks the store to raise s's max_seq and installs the answer.
// known is the limit s holds, -1 for a first load.
func (n *Node) runRaise(s *section, r *raise, known int64, offs []uint32) {
	ctx, cancel := n.raiseContext()
	defer cancel()
	res, err := n.store.RaiseSections(ctx, &seqsvrv1.RaiseSectionsRequest{
		NodeId: n.cfg.NodeID, InstanceId: n.instance, Space: s.key.space,
		Sections: []*seqsvrv1.SectionRaise{{Section: s.key.section, KnownMax: known, FirstUse: compact(offs)}},
	})
	if err == nil {
		n.writes.Add(1)
	}
	s.mu.Lock()
	forget := false
	r.err, forget = s.install(res, err, known)
	if r.err == nil && !forget {
		s.setUsed(offs)
	}
	if s.loaded() && !s.dropped {
		s.setRaiseAt()
		if known < 0 && r.err == nil {
			s.live.Store(true) // after every field the load set
		}
	}
	s.raising = nil
	close(r.done)
	s.mu.Unlock()
	if forget {
		n.log.Warn("seq section dropped", "space", s.key.space, "section", s.key.section, "err", r.err)
		n.forget(s)
	} else if r.err != nil {
		n.log.Debug("seq raise failed", "space", s.key.space, "section", s.key.section, "err", r.err)
	}
}

// install applies a raise's outcome to s (s.mu held). forget means the
// store refused this Node as the section's owner.
func (s *section) install(res *seqsvrv1.RaiseSectionsResponse, err error, known int64) (_ error, forget bool) {
	if err != nil {
		return s.storeRefused(err)
	}
	if s.dropped {
		return notServing(s.key), false
	}
	got := res.GetSections()
	if len(got) != 1 || got[0].GetSection() != s.key.section || !sane(got[0], known) {
		return fmt.Errorf("%w: store answered a malformed raise for section %d of %q", errs.Unavailable, s.key.section, s.key.space), false
	}
	m := got[0]
	if known < 0 {
		s.cur = make([]int64, s.size)
		s.used = make([]uint64, (s.size+63)/64)
		for b, x := range m.GetUsed() {
			if b/8 < len(s.used) {
				s.used[b/8] |= uint64(x) << (8 * (b % 8))
			}
		}
		s.allUsed = m.GetAllUsed()
		s.base, s.step = m.GetPrevMax(), m.GetMaxSeq()-m.GetPrevMax()
		s.limit.Store(m.GetMaxSeq())
		return nil, false
	}
	// Only this Node raises the section while it holds its memory, so a
	// prev_max above known is its own earlier raise that answered an error
	// (or a retry applied twice): the new max_seq is as good.
	s.limit.Store(max(s.limit.Load(), m.GetMaxSeq()))
	return nil, false
}

// storeRefused is a raise's or first-use write's failure as the caller
// sees it. failed_precondition is the store's definite answer that this
// allocsvr no longer owns the section: forget it, and answer unavailable,
// which every client retries (errs.Judge), so the call reaches the new
// owner. Anything else is answered as it is.
func (s *section) storeRefused(err error) (_ error, forget bool) {
	if errs.Code(err) == connect.CodeFailedPrecondition {
		return fmt.Errorf("%w: section %d of space %q is no longer this allocsvr's (retry): %v", errs.Unavailable, s.key.section, s.key.space, errs.Message(err)), true
	}
	return err, false
}

// sane reports whether m can answer a raise from known: above known, not
// below prev_max, and a load (known -1) gives at least one value.
func sane(m *seqsvrv1.SectionMax, known int64) bool {
	if known < 0 {
		return m.GetMaxSeq() > m.GetPrevMax() && m.GetPrevMax() >= 0
	}
	return m.GetMaxSeq() > known && m.GetMaxSeq() >= m.GetPrevMax()
}

// installMarks applies a first-use write's outcome to s (s.mu held).
func (s *section) installMarks(res *seqsvrv1.RaiseSectionsResponse, err error, offs []uint32) (_ error, forget bool) {
	if err != nil {
		return s.storeRefused(err)
	}
	if s.dropped || !s.loaded() {
		return notServing(s.key), false
	}
	if got := res.GetSections(); len(got) != 1 || got[0].GetSection() != s.key.section {
		return fmt.Errorf("%w: store answered a malformed first-use write for section %d of %q", errs.Unavailable, s.key.section, s.key.space), false
	}
	s.setUsed(offs)
	return nil, false
}

// setUsed adds committed first uses to s.used (s.mu held, s loaded).
func (s *section) setUsed(offs []uint32) {
	if !s.loaded() {
		return
	}
	for _, i := range offs {
		if int(i) < s.size {
			atomic.OrUint64(&s.used[i>>6], 1<<(i&63))
		}
	}
}

// compact sorts offs and drops repeats (several callers of one key).
func compact(offs []uint32) []uint32 {
	slices.Sort(offs)
	return slices.Compact(offs)
}
