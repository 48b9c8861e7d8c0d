package fsm

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// applyRaiseSections raises the durable max_seq of sections the caller
// owns. Only the live instance that owns every listed section may raise
// (a stale owner can never commit a limit it could use after losing the
// section). known_max -1 is a first load: max_seq + step, answering the
// previous max_seq where the caller starts the section's keys; otherwise
// max(max_seq, known_max + step), so a retry changes nothing. All or
// nothing: the first refused item leaves every section as it was.
func (st *fsmState) applyRaiseSections(now int64, c *seqsvrv1.RaiseSectionsCommand) Result {
	sp, ok := st.spaces[c.GetSpace()]
	if !ok {
		return Result{Err: fmt.Errorf("%w: space %q", errs.NotFound, c.GetSpace())}
	}
	if err := st.checkSeqCaller(c.GetNodeId(), c.GetInstanceId(), now); err != nil {
		return Result{Err: err}
	}
	out := &seqsvrv1.RaiseSectionsResponse{Sections: make([]*seqsvrv1.SectionMax, 0, len(c.GetSections()))}
	for _, item := range c.GetSections() {
		sec := item.GetSection()
		if sec >= sp.sections {
			return Result{Err: fmt.Errorf("%w: section %d of space %q, which has %d", errs.InvalidArgument, sec, sp.name, sp.sections)}
		}
		if owner := sp.owner(sec); owner != c.GetNodeId() {
			return Result{Err: fmt.Errorf("%w: not the owner of section %d of space %q (owner %q)", ErrNotSectionOwner, sec, sp.name, owner)}
		}
		if n := sp.keysIn(sec); slices.ContainsFunc(item.GetFirstUse(), func(i uint32) bool { return uint64(i) >= n }) {
			return Result{Err: fmt.Errorf("%w: first_use offset outside section %d of space %q (%d keys)", errs.InvalidArgument, sec, sp.name, n)}
		}
		prev := sp.maxes[sec]
		next := prev
		if !item.GetKeepMax() {
			var err error
			if next, err = raised(prev, item.GetKnownMax(), sp.step); err != nil {
				return Result{Err: fmt.Errorf("%w: section %d of space %q", err, sec, sp.name)}
			}
		}
		out.Sections = append(out.Sections, &seqsvrv1.SectionMax{Section: sec, PrevMax: prev, MaxSeq: next})
	}
	for i, m := range out.GetSections() {
		sec, item := m.GetSection(), c.GetSections()[i]
		_, tracked := sp.used[sec]
		if _, raisedBefore := sp.maxes[sec]; !raisedBefore || sp.maxes[sec] == 0 {
			// Never handed out a value: an empty set is exact.
			tracked = true
		}
		if m.GetMaxSeq() != sp.maxes[sec] {
			sp.rates[sec] = observeRate(sp.rates[sec], now, sp.maxes[sec], m.GetMaxSeq())
		}
		sp.maxes[sec] = m.GetMaxSeq()
		if !tracked {
			m.AllUsed = true
			continue
		}
		u := sp.used[sec]
		for _, k := range item.GetFirstUse() {
			u = u.add(k, sp.keysIn(sec))
		}
		sp.used[sec] = u
		if item.GetKnownMax() == -1 && !item.GetKeepMax() {
			m.Used = u.bytes()
		}
	}
	out.RoutingVersion = sp.routingVersion
	return Result{Raise: out}
}

// checkSeqCaller refuses a caller that is not the live instance of node.
func (st *fsmState) checkSeqCaller(node, instance string, now int64) error {
	m, ok := st.seqMembers[node]
	switch {
	case !ok:
		return fmt.Errorf("%w: node %q has no per-key sequence lease; heartbeat first", ErrNotSectionOwner, node)
	case m.GetInstanceId() != instance:
		return fmt.Errorf("%w: node %q is held by instance %q, not %q", ErrNotSectionOwner, node, m.GetInstanceId(), instance)
	case !st.seqLive(node, now):
		return fmt.Errorf("%w: the lease of node %q expired %d ms ago or it left", ErrNotSectionOwner, node, now-m.GetLeaseExpiresMs())
	}
	return nil
}

// raised is a section's new max_seq: prev + step for a first load
// (knownMax -1), else max(prev, knownMax + step).
func raised(prev, knownMax, step int64) (int64, error) {
	base := knownMax
	if knownMax == -1 {
		base = prev
	}
	if knownMax < -1 {
		return 0, fmt.Errorf("%w: known_max %d is below -1", errs.InvalidArgument, knownMax)
	}
	if base > math.MaxInt64-step {
		return 0, fmt.Errorf("%w: max_seq %d + step %d passes 2^63-1", errs.ResourceExhausted, base, step)
	}
	return max(prev, base+step), nil
}

// owner is the node that owns section sec ("" if none).
func (sp *space) owner(sec uint64) string {
	i, _ := slices.BinarySearchFunc(sp.runs, sec, func(r run, s uint64) int { return cmp.Compare(r.last, s) })
	if i < len(sp.runs) && sp.runs[i].first <= sec {
		return sp.runs[i].owner
	}
	return ""
}

// keysIn is the number of keys of section sec (the last may be short).
func (sp *space) keysIn(sec uint64) uint64 {
	return min(sp.size, sp.keyCount-sec*sp.size)
}
