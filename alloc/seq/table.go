package seq

import (
	"fmt"
	"sort"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// table is one space's routing table as the last heartbeat answered it.
// It is never changed once built.
type table struct {
	msg    *seqsvrv1.RoutingTable
	name   string // msg's space, size and key count, copied for the one-key path
	size   uint64
	keys   uint64
	ranges []*seqsvrv1.SectionRange // sorted by first_section
	dir    *spaceDir                // set before the table is published; nil: use the map
}

func newTable(msg *seqsvrv1.RoutingTable) *table {
	r := append([]*seqsvrv1.SectionRange(nil), msg.GetSections()...)
	sort.Slice(r, func(i, j int) bool { return r[i].GetFirstSection() < r[j].GetFirstSection() })
	return &table{msg: msg, ranges: r, name: msg.GetSpace(), size: msg.GetSectionSize(), keys: msg.GetKeyCount()}
}

// tableSet is what a heartbeat installs: every table by name, and for a
// few spaces the same tables in a slice. The one-key path finds its space
// in the slice by comparing names, which costs less than hashing the name
// for a map lookup (the largest item of a NextSeq by instruction count);
// most deployments have a handful of spaces.
type tableSet struct {
	byName tables
	few    []*table // nil when there are more than maxFewSpaces
}

// maxFewSpaces bounds the slice scan: past it the map is cheaper.
const maxFewSpaces = 8

func newTableSet(ts tables) *tableSet {
	set := &tableSet{byName: ts}
	if len(ts) <= maxFewSpaces {
		set.few = make([]*table, 0, len(ts))
		for _, t := range ts {
			set.few = append(set.few, t)
		}
	}
	return set
}

// find is space's table, nil if there is none.
func (set *tableSet) find(space string) *table {
	if set.few == nil {
		return set.byName[space]
	}
	for _, t := range set.few {
		if t.name == space {
			return t
		}
	}
	return nil
}

// tables is every space's table by name; nil until a heartbeat answered.
type tables map[string]*table

func newTables(msgs []*seqsvrv1.RoutingTable) tables {
	ts := make(tables, len(msgs))
	for _, m := range msgs {
		ts[m.GetSpace()] = newTable(m)
	}
	return ts
}

// get is the space's table: unavailable before the first heartbeat
// answered, not_found for a space the last heartbeat's tables lack. The
// message says so: a space created since then is served from the next
// heartbeat on, which a client that created it and called at once would
// otherwise take for a failed create. (Waiting for that heartbeat instead
// would hold every call for a misspelt space for up to an interval.)
func (ts tables) get(space string) (*table, error) {
	if ts == nil {
		return nil, fmt.Errorf("%w: no routing table yet (the store has not answered a heartbeat)", errs.Unavailable)
	}
	t := ts[space]
	if t == nil {
		return nil, fmt.Errorf("%w: space %q (not in this allocsvr's routing tables as of its last heartbeat; a space created since is served from the next one, within --seq-heartbeat-interval)", errs.NotFound, space)
	}
	return t, nil
}

func (t *table) version() uint64 { return t.msg.GetRoutingVersion() }

// section is the section holding key, after checking the key is in the
// space.
func (t *table) section(key uint64) (uint64, error) {
	if t.msg.GetSectionSize() == 0 {
		return 0, fmt.Errorf("%w: space %q has no section size in its routing table", errs.Unavailable, t.msg.GetSpace())
	}
	if key >= t.msg.GetKeyCount() {
		return 0, fmt.Errorf("%w: key %d out of range 0..%d of space %q", errs.InvalidArgument, key, t.msg.GetKeyCount()-1, t.msg.GetSpace())
	}
	return key / t.msg.GetSectionSize(), nil
}

// sections is how many sections the space has.
func (t *table) sections() uint64 {
	size := t.msg.GetSectionSize()
	if size == 0 {
		return 0
	}
	return (t.msg.GetKeyCount() + size - 1) / size
}

// sectionLen is how many keys section s holds (the last may be short).
func (t *table) sectionLen(s uint64) int {
	size := t.msg.GetSectionSize()
	return int(min(size, t.msg.GetKeyCount()-s*size))
}

// find is the range holding section s, nil if none does.
func (t *table) find(s uint64) *seqsvrv1.SectionRange {
	i := sort.Search(len(t.ranges), func(i int) bool { return t.ranges[i].GetLastSection() >= s })
	if i < len(t.ranges) && t.ranges[i].GetFirstSection() <= s {
		return t.ranges[i]
	}
	return nil
}

// serves reports whether node may serve section s by this table: it owns
// it and no handover is pending (a pending one is released at once).
func (t *table) serves(node string, s uint64) bool {
	r := t.find(s)
	return r != nil && r.GetOwner() == node && r.GetNextOwner() == ""
}

// releases are node's sections with a handover pending, as spans to
// release.
func (t *table) releases(node string) []*seqsvrv1.SectionSpan {
	var out []*seqsvrv1.SectionSpan
	for _, r := range t.ranges {
		if r.GetOwner() == node && r.GetNextOwner() != "" {
			out = append(out, &seqsvrv1.SectionSpan{Space: t.msg.GetSpace(), FirstSection: r.GetFirstSection(), LastSection: r.GetLastSection()})
		}
	}
	return out
}

// owned is how many sections the table gives node.
func (t *table) owned(node string) uint64 {
	var n uint64
	for _, r := range t.ranges {
		if r.GetOwner() == node {
			n += r.GetLastSection() - r.GetFirstSection() + 1
		}
	}
	return n
}
