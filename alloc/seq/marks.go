package seq

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// marker records the first uses of one space's keys in the store's
// used-sets (group commit): at most one RaiseSections write in flight for
// the space, and the next one takes every key queued while it was in
// flight, across all the space's sections (one Raft entry for all of
// them). Per section, the round in flight and the round accumulating
// would each carry about half the callers of that section; per space they
// carry half the callers of the space, so a space of 10 sections needs
// about a tenth of the writes for the same first uses.
type marker struct {
	mu      sync.Mutex
	pending map[*section][]uint32 // the next round's keys, by section
	next    *markRound            // what the keys in pending wait for
	busy    bool                  // a round's write is in flight
}

// markRound is one write of first uses; done closes when it ended, and
// err then says, per section, how (no entry: recorded).
type markRound struct {
	done chan struct{}
	err  map[*section]error
}

// markerOf is space's marker, made on first use.
func (n *Node) markerOf(space string) *marker {
	n.markMu.Lock()
	defer n.markMu.Unlock()
	m := n.markers[space]
	if m == nil {
		m = &marker{}
		n.markers[space] = m
	}
	return m
}

// markFirstUse queues key offset i of s for the next write of its space's
// first uses, starting that write unless one is in flight, and answers
// the round to wait for. s.mu must not be held.
func (n *Node) markFirstUse(s *section, i int) *markRound {
	m := n.markerOf(s.key.space)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.next == nil {
		m.pending = make(map[*section][]uint32)
		m.next = &markRound{done: make(chan struct{})}
	}
	m.pending[s] = append(m.pending[s], uint32(i))
	r := m.next
	if !m.busy {
		n.flushLocked(m)
	}
	return r
}

// flushLocked starts the write of m's pending round (m.mu held, none in
// flight).
func (n *Node) flushLocked(m *marker) {
	batch, r := m.pending, m.next
	m.pending, m.next, m.busy = nil, nil, true
	go func() {
		n.runMarks(batch, r)
		m.mu.Lock()
		defer m.mu.Unlock()
		m.busy = false
		if m.next != nil { // keys queued while this write was in flight
			n.flushLocked(m)
		}
	}()
}

// runMarks writes one round: one RaiseSections (keep_max) listing every
// section's first uses. The store applies it all or nothing, so when it
// is refused and lists several sections (one of them may have moved),
// each section is written on its own, and gets its own outcome.
func (n *Node) runMarks(batch map[*section][]uint32, r *markRound) {
	defer close(r.done)
	r.err = make(map[*section]error)
	secs := make([]*section, 0, len(batch))
	for s := range batch {
		batch[s] = compact(batch[s])
		secs = append(secs, s)
	}
	slices.SortFunc(secs, func(a, b *section) int { return cmp.Compare(a.key.section, b.key.section) })
	if len(secs) > 1 {
		res, err := n.writeMarks(secs, batch)
		if err == nil && len(res.GetSections()) == len(secs) {
			for i, s := range secs {
				if got := res.GetSections()[i].GetSection(); got != s.key.section {
					err = fmt.Errorf("%w: store answered a malformed first-use write for space %q", errs.Unavailable, s.key.space)
				}
			}
			if err == nil {
				for _, s := range secs {
					s.mu.Lock()
					if s.dropped || !s.loaded() {
						r.err[s] = notServing(s.key)
					} else {
						s.setUsed(batch[s])
					}
					s.mu.Unlock()
				}
				return
			}
		}
		n.log.Debug("seq first-use write of several sections failed; writing them one by one", "space", secs[0].key.space, "err", err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, s := range secs {
		wg.Go(func() {
			if err := n.markOne(s, batch[s]); err != nil {
				mu.Lock()
				r.err[s] = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// writeMarks is the store write of secs' first uses (keep_max: no
// max_seq moves).
func (n *Node) writeMarks(secs []*section, batch map[*section][]uint32) (*seqsvrv1.RaiseSectionsResponse, error) {
	ctx, cancel := n.raiseContext()
	defer cancel()
	items := make([]*seqsvrv1.SectionRaise, len(secs))
	for i, s := range secs {
		items[i] = &seqsvrv1.SectionRaise{Section: s.key.section, FirstUse: batch[s], KeepMax: true}
	}
	res, err := n.store.RaiseSections(ctx, &seqsvrv1.RaiseSectionsRequest{
		NodeId: n.cfg.NodeID, InstanceId: n.instance, Space: secs[0].key.space, Sections: items,
	})
	if err == nil {
		n.markWrites.Add(1)
	}
	return res, err
}

// markOne records offs of s alone and installs the outcome; a refusal
// as owner drops s.
func (n *Node) markOne(s *section, offs []uint32) error {
	res, err := n.writeMarks([]*section{s}, map[*section][]uint32{s: offs})
	s.mu.Lock()
	err, forget := s.installMarks(res, err, offs)
	s.mu.Unlock()
	if forget {
		n.log.Warn("seq section dropped", "space", s.key.space, "section", s.key.section, "err", err)
		n.forget(s)
	} else if err != nil {
		n.log.Debug("seq first-use write failed", "space", s.key.space, "section", s.key.section, "err", err)
	}
	return err
}

// waitMark waits until round r ended, within ctx, and answers s's outcome.
func waitMark(ctx context.Context, r *markRound, s *section) error {
	select {
	case <-r.done:
		return r.err[s]
	case <-ctx.Done():
		return fmt.Errorf("%w: section %d of space %q: the key's first use not recorded within the call's deadline: %v", errs.Unavailable, s.key.section, s.key.space, ctx.Err())
	}
}
