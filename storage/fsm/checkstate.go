package fsm

import (
	"fmt"
	"math"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// MaxStepLimit is the largest tag step a state read from outside (a
// backup) may hold, whatever --max-segment-size the lost cluster ran
// with: twice it, a restore's jump floor, stays far below 2^63.
const MaxStepLimit = int64(1) << 40

// MaxStateSections bounds the sections of all spaces of a state read from
// outside: a restore or recovery gives every section its own jumped
// max_seq, about 100 bytes each.
const MaxStateSections = 4 * spec.MaxSectionCount

// CheckState reports every way st breaks the rules the state machine
// keeps for the states it builds itself, so that a state read from a
// file (a backup) is refused before anything is built from it: a state
// that passes can be restored, jumped and served without a panic, an
// unbounded allocation or an ID handed out twice. Each problem is one
// error wrapping errs.InvalidArgument and naming where it is; nil when
// there is none. At most maxProblems are listed.
func CheckState(st *seqsvrv1.FSMSnapshot) []error {
	c := &checker{}
	if st == nil {
		c.add("the state is missing")
		return c.errs
	}
	if err := ValidateKey("cluster_id", st.GetClusterId(), false); err != nil {
		c.add("state: %v", err)
	}
	c.nonNegative("last_now_ms", st.GetLastNowMs())
	c.nonNegative("restore_fence_ms", st.GetRestoreFenceMs())
	c.nonNegative("generation", st.GetGeneration())
	workerIDs := c.layout(st.GetLayout())
	if n := st.GetNextWorkerId(); n < 0 || (workerIDs > 0 && n > workerIDs) {
		c.add("next_worker_id %d is outside 0..%d, the layout's worker IDs", n, workerIDs)
	}
	c.tags(st)
	var sections uint64
	for _, sp := range st.GetSpaces() {
		sections += c.space(sp)
	}
	if sections > MaxStateSections {
		c.add("the spaces have %d sections in all, more than the %d a restore or recovery can jump (each gets its own max_seq)", sections, MaxStateSections)
	}
	c.spaceNames(st.GetSpaces())
	c.workers(st.GetWorkers(), workerIDs)
	c.seqMembers(st.GetSeqMembers())
	seen := map[string]bool{}
	for _, m := range st.GetMembers() {
		for _, f := range [][2]string{{"id", m.GetId()}, {"raft_addr", m.GetRaftAddr()}, {"http_addr", m.GetHttpAddr()}} {
			if err := ValidateKey(f[0], f[1], f[0] == "id"); err != nil {
				c.add("member %q: %v", m.GetId(), err)
			}
		}
		c.unique(seen, "member", m.GetId())
	}
	for _, r := range st.GetRequests() {
		if err := ValidateKey("request_id", r.GetRequestId(), true); err != nil {
			c.add("request record: %v", err)
		}
	}
	return c.errs
}

// maxProblems bounds the list: a file of a million bad tags is named by
// its first few.
const maxProblems = 50

type checker struct {
	errs []error
	more int
}

func (c *checker) add(format string, args ...any) {
	if len(c.errs) >= maxProblems {
		c.more++
		if c.more == 1 {
			c.errs = append(c.errs, invalid("and more problems, not listed"))
		}
		return
	}
	c.errs = append(c.errs, invalid(format, args...))
}

// invalid is an errs.InvalidArgument error of format; an error among args
// is shown without its own kind's text, so a nested rule reads once.
func invalid(format string, args ...any) error {
	for i, a := range args {
		if err, ok := a.(error); ok {
			args[i] = errs.Detail(err)
		}
	}
	return fmt.Errorf("%w: "+format, append([]any{errs.InvalidArgument}, args...)...)
}

// Invalid is invalid for other packages' checks of persisted state.
func Invalid(format string, args ...any) error { return invalid(format, args...) }

func (c *checker) nonNegative(field string, v int64) {
	if v < 0 {
		c.add("%s is %d, below 0", field, v)
	}
}

func (c *checker) unique(seen map[string]bool, what, name string) {
	if seen[name] {
		c.add("%s %q is listed twice", what, name)
	}
	seen[name] = true
}

func (c *checker) name(what, name string) bool {
	if err := spec.CheckTag(name); err != nil {
		c.add("%s: %v", what, err) // CheckTag names the name
		return false
	}
	return true
}

// layout checks the snowflake layout (nil: the default) and returns how
// many worker IDs it has.
func (c *checker) layout(l *seqsvrv1.SnowflakeLayout) int64 {
	if l == nil {
		l = spec.DefaultLayout()
	}
	ts, w, sq := l.GetTimestampBits(), l.GetWorkerBits(), l.GetSequenceBits()
	if ts < 1 || w < 1 || sq < 1 || w > 30 || uint64(ts)+uint64(w)+uint64(sq) > 63 || l.GetEpochMs() < 0 {
		c.add("snowflake layout %d+%d+%d bits from epoch %d: want 1 or more bits each, at most 63 in all and at most 30 worker bits, and an epoch of 0 or more",
			ts, w, sq, l.GetEpochMs())
		return 0
	}
	return int64(1) << w
}

// tags checks tags and tombstones: names by the tag rule, each name once
// among both (a deleted tag leaves the tombstones when created again),
// max_id and the peak rate at least 0, a tag's step 1..MaxStepLimit.
func (c *checker) tags(st *seqsvrv1.FSMSnapshot) {
	seen := map[string]bool{}
	for _, t := range st.GetTags() {
		if !c.name("tag", t.GetTag()) {
			continue
		}
		c.unique(seen, "tag", t.GetTag())
		if t.GetMaxId() < 0 {
			c.add("tag %q: max_id %d is below 0", t.GetTag(), t.GetMaxId())
		}
		if s := t.GetStep(); s < 1 || s > MaxStepLimit {
			c.add("tag %q: step %d is outside 1..%d", t.GetTag(), s, MaxStepLimit)
		}
		if err := validateDescription(t.GetDescription()); err != nil {
			c.add("tag %q: %v", t.GetTag(), err)
		}
		c.rate("tag "+t.GetTag(), t.GetRate())
	}
	for _, t := range st.GetTombstones() {
		if !c.name("tombstone", t.GetTag()) {
			continue
		}
		c.unique(seen, "tag or tombstone", t.GetTag())
		if t.GetMaxId() < 0 {
			c.add("tombstone %q: max_id %d is below 0", t.GetTag(), t.GetMaxId())
		}
		c.rate("tombstone "+t.GetTag(), t.GetRate())
	}
}

func (c *checker) rate(what string, r *seqsvrv1.RateState) {
	if r.GetPeakPerSec() < 0 {
		c.add("%s: peak rate %d is below 0", what, r.GetPeakPerSec())
	}
}

func (c *checker) spaceNames(spaces []*seqsvrv1.SpaceState) {
	seen := map[string]bool{}
	for _, sp := range spaces {
		if spec.CheckTag(sp.GetSpace()) == nil {
			c.unique(seen, "space", sp.GetSpace())
		}
	}
}

// space checks a space's shape as CreateSpace does (stored with every
// default applied, so no field may be 0), its routing runs and its
// sections' max_seq and used-sets. It returns the space's section count
// (0 when its shape is refused).
func (c *checker) space(sp *seqsvrv1.SpaceState) uint64 {
	name := sp.GetSpace()
	if !c.name("space", name) {
		return 0
	}
	keys, size, step := sp.GetKeyCount(), sp.GetSectionSize(), sp.GetStep()
	if keys == 0 || size == 0 || step == 0 {
		c.add("space %q: key_count %d, section_size %d, step %d: none may be 0", name, keys, size, step)
		return 0
	}
	if _, _, _, err := spaceShape(keys, size, step); err != nil {
		c.add("space %q: %v", name, err)
		return 0
	}
	if err := validateDescription(sp.GetDescription()); err != nil {
		c.add("space %q: %v", name, err)
	}
	n := spec.SectionCount(keys, size)
	var next uint64
	for _, r := range sp.GetSections() {
		if r.GetFirstSection() > r.GetLastSection() || r.GetLastSection() >= n || r.GetFirstSection() < next {
			c.add("space %q: routing run [%d, %d] is empty, overlaps the one before or passes its last section %d", name, r.GetFirstSection(), r.GetLastSection(), n-1)
			break
		}
		next = r.GetLastSection() + 1
		if err := ValidateKey("owner", r.GetOwner(), false); err != nil {
			c.add("space %q: %v", name, err)
		}
	}
	usedBytes := (size + 7) / 8
	seen := make(map[uint64]bool, len(sp.GetMaxes()))
	for _, m := range sp.GetMaxes() {
		sec := m.GetSection()
		switch {
		case sec >= n:
			c.add("space %q: section %d is past its last section %d", name, sec, n-1)
		case seen[sec]:
			c.add("space %q: section %d is listed twice", name, sec)
		case m.GetMaxSeq() < 0:
			c.add("space %q: section %d: max_seq %d is below 0", name, sec, m.GetMaxSeq())
		case uint64(len(m.GetUsed())) > usedBytes:
			c.add("space %q: section %d: used-set of %d bytes, a section of %d keys has %d", name, sec, len(m.GetUsed()), size, usedBytes)
		}
		seen[sec] = true
		c.rate(fmt.Sprintf("space %s section %d", name, sec), m.GetRate())
	}
	return n
}

// workers checks the snowflake workers: node IDs by the key rule, each
// node and each worker ID once, worker IDs within the layout's, and
// timestamps at least 0.
func (c *checker) workers(ws []*seqsvrv1.WorkerState, ids int64) {
	nodes, taken := map[string]bool{}, map[int64]bool{}
	for _, w := range ws {
		if err := ValidateKey("worker node_id", w.GetNodeId(), true); err != nil {
			c.add("worker: %v", err)
			continue
		}
		c.unique(nodes, "worker node", w.GetNodeId())
		id := w.GetWorkerId()
		switch {
		case id < 0 || (ids > 0 && id >= ids):
			c.add("worker %q: worker_id %d is outside 0..%d", w.GetNodeId(), id, ids-1)
		case taken[id]:
			c.add("worker %q: worker_id %d is held by another node too", w.GetNodeId(), id)
		}
		taken[id] = true
		if err := ValidateKey("instance_id", w.GetInstanceId(), false); err != nil {
			c.add("worker %q: %v", w.GetNodeId(), err)
		}
		if w.GetLastTimestampMs() < 0 || w.GetLeaseExpiresMs() < 0 || w.GetRegisteredMs() < 0 {
			c.add("worker %q: a time below 0 (last_timestamp_ms %d, lease_expires_ms %d, registered_ms %d)",
				w.GetNodeId(), w.GetLastTimestampMs(), w.GetLeaseExpiresMs(), w.GetRegisteredMs())
		}
	}
}

func (c *checker) seqMembers(ms []*seqsvrv1.SeqMemberState) {
	seen := map[string]bool{}
	for _, m := range ms {
		if err := validateSeqCaller(m.GetNodeId(), m.GetInstanceId()); err != nil {
			c.add("per-key member %q: %v", m.GetNodeId(), err)
			continue
		}
		c.unique(seen, "per-key member", m.GetNodeId())
		if err := ValidateKey("url", m.GetUrl(), false); err != nil {
			c.add("per-key member %q: %v", m.GetNodeId(), err)
		}
		if m.GetLeaseExpiresMs() < 0 {
			c.add("per-key member %q: lease_expires_ms %d is below 0", m.GetNodeId(), m.GetLeaseExpiresMs())
		}
	}
}

// LeaseEnds is the latest lease end in st (worker and per-key member
// leases, and the workers' last timestamps), for a caller that bounds
// them by a time; math.MinInt64 when there is none.
func LeaseEnds(st *seqsvrv1.FSMSnapshot) (workerLease, workerStamp, seqLease int64) {
	workerLease, workerStamp, seqLease = math.MinInt64, math.MinInt64, math.MinInt64
	for _, w := range st.GetWorkers() {
		workerLease = max(workerLease, w.GetLeaseExpiresMs())
		workerStamp = max(workerStamp, w.GetLastTimestampMs())
	}
	for _, m := range st.GetSeqMembers() {
		seqLease = max(seqLease, m.GetLeaseExpiresMs())
	}
	return workerLease, workerStamp, seqLease
}
