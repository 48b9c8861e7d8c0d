package recovery

import (
	"errors"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/spec"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// Options of Prepare.
type Options struct {
	// Over is the jump duration (see DefaultOver).
	Over time.Duration
	// MinJump is the smallest jump of any counter.
	MinJump int64
	// MaxSegmentSize is the largest segment the lost cluster allowed; a
	// tag's floor is twice it (or twice the tag's step, if larger).
	MaxSegmentSize int64
	// Start is when the restore started, on this member's clock (the new
	// leader's).
	Start time.Time
	// LeaseWait is how long after Start every lease of the lost cluster
	// has surely ended: the longest lease TTL plus a margin for the clocks
	// (storesvr's leaseMargin, 2 s); an allocsvr stops serving under a
	// lease within one TTL of its last renewal, which was before Start.
	LeaseWait time.Duration
	// ClusterID is the new cluster's identity.
	ClusterID string
	// Generation is the new cluster's generation as the caller proposes it
	// (the restore's wall clock in Unix ms); the state gets the higher of
	// it and the lost cluster's + 1, so a restore always outranks the
	// cluster it replaces, whatever the clocks say.
	Generation int64
}

// routingJump is added to every space's routing_version, so allocsvrs
// that saw the lost cluster's later tables still take the new ones as
// newer.
const routingJump = uint64(1) << 32

// Prepare is the new cluster's first state built from old (left
// unchanged), and every jump it made, in the order tags, tombstones,
// raised sections, then one line per space for its never-raised sections.
func Prepare(old *seqsvrv1.FSMSnapshot, o Options) (*seqsvrv1.FSMSnapshot, []Jump, error) {
	if o.ClusterID == "" {
		return nil, nil, errors.New("recovery: a new cluster ID is required")
	}
	if o.Over < 0 || o.MinJump < 0 {
		return nil, nil, errors.New("recovery: the jump duration and minimum must not be negative")
	}
	// A state that breaks the state machine's rules would jump wrong
	// (a name twice), allocate without bound (sections) or panic once
	// served: refused before anything is built from it.
	if ps := fsm.CheckState(old); len(ps) > 0 {
		return nil, nil, fmt.Errorf("recovery: the state breaks the store's rules: %w", errors.Join(ps...))
	}
	if old.GetGeneration() == math.MaxInt64 {
		return nil, nil, fmt.Errorf("recovery: the state's generation %d leaves no higher one for a new cluster", old.GetGeneration())
	}
	st := proto.Clone(old).(*seqsvrv1.FSMSnapshot)
	startMs := o.Start.UnixMilli()
	var jumps []Jump
	jump := func(name, field string, from, rate, floor int64) int64 {
		to, sat := Compute(from, rate, o.Over, o.MinJump, floor)
		jumps = append(jumps, Jump{Name: name, Field: field, From: from, To: to, RatePerSec: rate, Over: o.Over, Floor: floor, MinJump: o.MinJump, Saturated: sat})
		return to
	}
	for _, t := range st.GetTags() {
		t.MaxId = jump(t.GetTag(), "max_id", t.GetMaxId(), t.GetRate().GetPeakPerSec(), floorOf(o.MaxSegmentSize, t.GetStep()))
		if t.Rate != nil {
			t.Rate.WindowStartMs, t.Rate.WindowStartValue = startMs, t.MaxId
		}
	}
	for _, t := range st.GetTombstones() {
		// A deleted name may have been created again, and used, after the
		// state was taken: it jumps like a live tag.
		t.MaxId = jump("tombstone "+t.GetTag(), "max_id", t.GetMaxId(), t.GetRate().GetPeakPerSec(), floorOf(o.MaxSegmentSize, 0))
	}
	for _, sp := range st.GetSpaces() {
		prepareSpace(sp, o, startMs, &jumps, jump)
	}
	for _, w := range st.GetWorkers() {
		// Void: no instance holds it (a renewal from the old one is
		// refused), its lease ended at the restore's start, and its IDs
		// start no lower than that.
		w.InstanceId, w.LeaseExpiresMs = "", min(w.GetLeaseExpiresMs(), startMs)
		w.LastTimestampMs = max(w.GetLastTimestampMs(), startMs)
	}
	st.SeqMembers, st.Members, st.Requests = nil, nil, nil
	st.ClusterId = o.ClusterID
	st.Generation = max(o.Generation, old.GetGeneration()+1)
	st.RestoreFenceMs = o.Start.Add(o.LeaseWait).UnixMilli()
	return st, jumps, nil
}

// prepareSpace jumps every section of sp, unowns all of them and drops the
// used-sets.
func prepareSpace(sp *seqsvrv1.SpaceState, o Options, startMs int64, jumps *[]Jump,
	jump func(name, field string, from, rate, floor int64) int64) {
	n := spec.SectionCount(sp.GetKeyCount(), max(sp.GetSectionSize(), 1))
	floor := floorOf(sp.GetStep(), 0)
	raised := make(map[uint64]bool, len(sp.GetMaxes()))
	var peak int64
	for _, m := range sp.GetMaxes() {
		peak = max(peak, m.GetRate().GetPeakPerSec())
	}
	for _, m := range sp.GetMaxes() {
		raised[m.GetSection()] = true
		m.MaxSeq = jump(fmt.Sprintf("%s/section %d", sp.GetSpace(), m.GetSection()), "max_seq", m.GetMaxSeq(), m.GetRate().GetPeakPerSec(), floor)
		if m.Rate != nil {
			m.Rate.WindowStartMs, m.Rate.WindowStartValue = startMs, m.MaxSeq
		}
		m.UsedTracked, m.Used = false, nil
	}
	// A section never raised in the copy may have been raised since: it
	// jumps from 0 at the space's fastest section's rate.
	if fresh := n - uint64(len(raised)); fresh > 0 {
		to, sat := Compute(0, peak, o.Over, o.MinJump, floor)
		*jumps = append(*jumps, Jump{Name: fmt.Sprintf("%s/%d sections never raised", sp.GetSpace(), fresh), Field: "max_seq", To: to,
			RatePerSec: peak, Over: o.Over, Floor: floor, MinJump: o.MinJump, Saturated: sat})
		for sec := range n {
			if !raised[sec] {
				sp.Maxes = append(sp.Maxes, &seqsvrv1.SectionMaxState{Section: sec, MaxSeq: to})
			}
		}
		sortMaxes(sp.Maxes)
	}
	if n > 0 {
		sp.Sections = []*seqsvrv1.SectionRange{{FirstSection: 0, LastSection: n - 1}}
	}
	sp.RoutingVersion += routingJump
}
