package fsm

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// space is one per-key sequence space in the FSM: its shape, its routing
// table (a compact list of runs covering every section) and the durable
// max_seq of every section ever raised (a section not in maxes is at 0).
type space struct {
	name           string
	keyCount, size uint64 // size: keys per section
	sections       uint64 // ceil(keyCount/size)
	step           int64
	description    string
	createTimeMs   int64
	routingVersion uint64
	runs           []run
	maxes          map[uint64]int64
	// rates: how fast each raised section's max_seq advanced.
	rates map[uint64]*seqsvrv1.RateState
	// used holds the used-set of every section whose keys the store
	// tracks (see usedSet); a section raised but absent here was raised
	// before the store kept used-sets, and all its keys count as used.
	used map[uint64]usedSet
}

// spaceShape resolves CreateSpace's zero fields to their defaults and
// checks the limits. The service calls it to refuse early, the FSM again so
// a command that got past an older validator changes nothing.
func spaceShape(keyCount, sectionSize uint64, step int64) (uint64, uint64, int64, error) {
	if keyCount == 0 {
		keyCount = spec.DefaultKeyCount
	}
	if sectionSize == 0 {
		sectionSize = spec.DefaultSectionSize
	}
	if step == 0 {
		step = spec.DefaultSeqStep
	}
	switch {
	case sectionSize > spec.MaxSectionSize:
		return 0, 0, 0, fmt.Errorf("%w: section_size %d is over the limit %d", errs.InvalidArgument, sectionSize, spec.MaxSectionSize)
	case step < 1 || step > spec.MaxSeqStep:
		return 0, 0, 0, fmt.Errorf("%w: step must be 1..%d, got %d", errs.InvalidArgument, spec.MaxSeqStep, step)
	}
	if n := spec.SectionCount(keyCount, sectionSize); n > spec.MaxSectionCount {
		return 0, 0, 0, fmt.Errorf("%w: %d keys in sections of %d make %d sections, the limit is %d; raise section_size",
			errs.InvalidArgument, keyCount, sectionSize, n, spec.MaxSectionCount)
	}
	return keyCount, sectionSize, step, nil
}

// applyCreateSpace adds the space with every section unowned and
// routing_version 1, then hands the sections to the live allocsvrs.
func (st *fsmState) applyCreateSpace(now int64, c *seqsvrv1.CreateSpaceCommand) Result {
	if _, ok := st.spaces[c.GetSpace()]; ok {
		return Result{Err: fmt.Errorf("%w: space %q", errs.AlreadyExists, c.GetSpace())}
	}
	keys, size, step, err := spaceShape(c.GetKeyCount(), c.GetSectionSize(), c.GetStep())
	if err != nil {
		return Result{Err: err}
	}
	sp := &space{
		name: c.GetSpace(), keyCount: keys, size: size, sections: spec.SectionCount(keys, size), step: step,
		description: c.GetDescription(), createTimeMs: now, routingVersion: 1, maxes: map[uint64]int64{}, used: map[uint64]usedSet{},
		rates: map[uint64]*seqsvrv1.RateState{},
	}
	sp.runs = []run{{first: 0, last: sp.sections - 1}}
	st.spaces[sp.name] = sp
	st.rebalance(now)
	return Result{Space: sp.api()}
}

// api is the space as StoreService answers it.
func (sp *space) api() *seqsvrv1.Space {
	return &seqsvrv1.Space{
		Space: sp.name, KeyCount: sp.keyCount, SectionSize: sp.size, Step: sp.step, Description: sp.description,
		CreateTime: timestamppb.New(time.UnixMilli(sp.createTimeMs)), SectionCount: sp.sections,
	}
}

// state is the space as snapshots store it: runs hold owner and
// next_owner only, maxes are in section order.
func (sp *space) state() *seqsvrv1.SpaceState {
	s := &seqsvrv1.SpaceState{
		Space: sp.name, KeyCount: sp.keyCount, SectionSize: sp.size, Step: sp.step, Description: sp.description,
		CreateTimeMs: sp.createTimeMs, RoutingVersion: sp.routingVersion,
	}
	for _, r := range sp.runs {
		s.Sections = append(s.Sections, &seqsvrv1.SectionRange{FirstSection: r.first, LastSection: r.last, Owner: r.owner, NextOwner: r.next})
	}
	for _, sec := range sortedKeys(sp.maxes) {
		u, tracked := sp.used[sec]
		s.Maxes = append(s.Maxes, &seqsvrv1.SectionMaxState{Section: sec, MaxSeq: sp.maxes[sec], UsedTracked: tracked, Used: u.bytes(),
			Rate: cloneRate(sp.rates[sec])})
	}
	return s
}

func spaceFromState(s *seqsvrv1.SpaceState) *space {
	sp := &space{
		name: s.GetSpace(), keyCount: s.GetKeyCount(), size: s.GetSectionSize(), step: s.GetStep(),
		description: s.GetDescription(), createTimeMs: s.GetCreateTimeMs(), routingVersion: s.GetRoutingVersion(),
		maxes: make(map[uint64]int64, len(s.GetMaxes())), used: map[uint64]usedSet{}, rates: map[uint64]*seqsvrv1.RateState{},
	}
	sp.sections = spec.SectionCount(sp.keyCount, sp.size)
	for _, r := range s.GetSections() {
		sp.runs = append(sp.runs, run{first: r.GetFirstSection(), last: r.GetLastSection(), owner: r.GetOwner(), next: r.GetNextOwner()})
	}
	for _, m := range s.GetMaxes() {
		sp.maxes[m.GetSection()] = m.GetMaxSeq()
		if m.GetRate() != nil {
			sp.rates[m.GetSection()] = cloneRate(m.GetRate())
		}
		if m.GetUsedTracked() {
			sp.used[m.GetSection()] = usedSet(slices.Clone(m.GetUsed()))
		}
	}
	return sp
}
