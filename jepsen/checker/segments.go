package checker

import (
	"fmt"
	"sort"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// forKind picks a checker's name for segment IDs or for snowflake IDs.
func forKind(kind, segment, snowflake string) string {
	if kind == history.Snowflake {
		return snowflake
	}
	return segment
}

// idScope is what an ID is unique and increasing within: its tag for a
// segment ID, nothing narrower than the process for a snowflake ID.
func idScope(op *history.Op) string {
	if op.Kind == history.Snowflake {
		return ""
	}
	return op.Tag
}

type owner struct {
	op  int64
	who string
}

// UniqueIDs checks that no ID of the given kind (NextIDs or Snowflake)
// was returned twice, by any process, per tag for segment IDs.
//
// Per tag, not per life of a tag: a tag deleted and re-created (the
// operator fault) continues above its tombstone's max_id (guarantee 7), so
// an ID of one life issued again in a later one is a duplicate like any
// other.
//
// Starting and stopping: only answered IDs are judged (a starting
// process's 503 and a stopping one's dropped calls carry none; a
// stopping process's last answers belong to its lifetime like any
// other); nothing is excused.
func UniqueIDs(ops []*history.Op, kind string) Result {
	name := forKind(kind, SegmentUnique, SnowflakeUnique)
	seen := map[string]map[int64]owner{}
	var p problems
	n := 0
	for _, op := range ops {
		if op.Kind != kind || !op.OK {
			continue
		}
		key := idScope(op)
		m := seen[key]
		if m == nil {
			m = map[int64]owner{}
			seen[key] = m
		}
		for _, id := range op.IDs {
			n++
			if prev, dup := m[id]; dup {
				p.add("id %d (tag %q) returned by op %d on %s and op %d on %s", id, op.Tag, prev.op, prev.who, op.ID, op.Target)
				continue
			}
			m[id] = owner{op.ID, op.Target}
		}
	}
	if p.n > 0 {
		return fail(name, n, "%s", p.String())
	}
	return pass(name, n, "%d IDs, no duplicate", n)
}

// lifeKey names one process lifetime (and a tag). The pid is part of it:
// a process name and start count do not identify a lifetime when the
// harness makes a fresh process under a reused name (the takeover twin).
type lifeKey struct {
	target string
	life   int
	pid    int
	tag    string
}

// MonotonicPerLifetime checks that, within one process lifetime and one
// tag, IDs are strictly increasing inside each response and between
// responses in real-time order (a response that returned before another
// was called holds only smaller IDs). Snowflake ops use the tag "".
//
// A delete and re-create of the tag within a lifetime changes nothing
// here: the allocsvr keeps serving what it buffered of the old life (IDs
// below the tombstone) until it drops those buffers, and every later
// segment comes from the new life, above the tombstone's max_id, so the
// IDs still rise.
//
// Starting and stopping: only answered IDs are judged (a starting
// process's 503 and a stopping one's dropped calls carry none; a
// stopping process's last answers belong to its lifetime like any
// other); nothing is excused.
func MonotonicPerLifetime(ops []*history.Op, kind string) Result {
	name := forKind(kind, SegmentMonotonic, SnowflakeMonotonic)
	groups := map[lifeKey][]*history.Op{}
	n := 0
	var p problems
	for _, op := range ops {
		if op.Kind != kind || !op.OK || len(op.IDs) == 0 || op.Life != op.LifeReturn {
			continue
		}
		for i := 1; i < len(op.IDs); i++ {
			if op.IDs[i] <= op.IDs[i-1] {
				p.add("op %d on %s: ids not increasing inside one response at %d", op.ID, op.Target, i)
				break
			}
		}
		k := lifeKey{op.Target, op.Life, op.Pid, idScope(op)}
		groups[k] = append(groups[k], op)
		n++
	}
	for k, g := range groups {
		realTimeIncreasing(g, func(prev, cur *history.Op) {
			p.add("%s life %d tag %q: op %d (called after op %d returned) has id %d <= %d", k.target, k.life, k.tag, cur.ID, prev.ID, cur.IDs[0], prev.IDs[len(prev.IDs)-1])
		})
	}
	if p.n > 0 {
		return fail(name, n, "%s", p.String())
	}
	return pass(name, n, "%d responses in %d process lifetimes", n, len(groups))
}

// realTimeIncreasing calls bad for each op whose smallest ID is not above
// the largest ID of every op of g that returned before it was called.
func realTimeIncreasing(g []*history.Op, bad func(prev, cur *history.Op)) {
	byCall := append([]*history.Op{}, g...)
	sort.Slice(byCall, func(i, j int) bool { return byCall[i].Call < byCall[j].Call })
	byRet := append([]*history.Op{}, g...)
	sort.Slice(byRet, func(i, j int) bool { return byRet[i].Return < byRet[j].Return })
	var best *history.Op // returned-before op with the largest max ID
	j := 0
	for _, cur := range byCall {
		for j < len(byRet) && byRet[j].Return < cur.Call {
			r := byRet[j]
			if best == nil || r.IDs[len(r.IDs)-1] > best.IDs[len(best.IDs)-1] {
				best = r
			}
			j++
		}
		if best != nil && cur.IDs[0] <= best.IDs[len(best.IDs)-1] {
			bad(best, cur)
		}
	}
}

// WithinReserved checks that every segment ID lies in (start, final
// max_id] of its tag: an ID above max_id was never durably reserved. The
// final max_id is that of the tag's last life, which started at or above
// the max_id of every earlier one, so the bound covers the IDs of all its
// lives.
//
// Starting and stopping: only answered IDs are judged (a starting
// process's 503 and a stopping one's dropped calls carry none; a
// stopping process's last answers belong to its lifetime like any
// other); nothing is excused.
func WithinReserved(ops []*history.Op, finalMax map[string]int64) Result {
	const name = SegmentWithinReserved
	var p problems
	n := 0
	for _, op := range ops {
		if op.Kind != history.NextIDs || !op.OK {
			continue
		}
		max, ok := finalMax[op.Tag]
		if !ok {
			p.add("tag %q: final max_id unknown", op.Tag)
			continue
		}
		for _, id := range op.IDs {
			n++
			if id < 1 || id > max {
				p.add("op %d on %s: id %d outside (0, %d]", op.ID, op.Target, id, max)
			}
		}
	}
	if p.n > 0 {
		return fail(name, n, "%s", p.String())
	}
	return pass(name, n, "%d IDs at or below the final max_id of their tag", n)
}

// SegmentsDisjoint checks that no two acknowledged reservations overlap.
//
// Starting and stopping: only acknowledged segments are judged; a
// starting storesvr's 503 acknowledges none; nothing is excused.
func SegmentsDisjoint(ops []*history.Op) Result {
	const name = SegmentsDisjointName
	by := map[string][]*history.Op{}
	n := 0
	for _, op := range ops {
		if op.Kind == history.Reserve && op.OK {
			by[op.Tag] = append(by[op.Tag], op)
			n++
		}
	}
	var p problems
	for tag, segs := range by {
		sort.Slice(segs, func(i, j int) bool { return segs[i].First < segs[j].First })
		for i := 1; i < len(segs); i++ {
			a, b := segs[i-1], segs[i]
			if b.First <= a.Last {
				p.add("tag %q: op %d [%d,%d] overlaps op %d [%d,%d]", tag, a.ID, a.First, a.Last, b.ID, b.First, b.Last)
			}
		}
	}
	if p.n > 0 {
		return fail(name, n, "%s", p.String())
	}
	return pass(name, n, "%d acknowledged segments, none overlapping", n)
}

// FinalState checks that every member reports the same max_id per tag
// after the run, and that it is at least the end of every acknowledged
// reservation. final maps member -> tag -> max_id (absent: no answer).
//
// Starting and stopping: the members are read after the load, again
// until they agree (30 s): a member still starting is waited for, never
// excused.
func FinalState(ops []*history.Op, final map[string]map[string]int64, tags []string) Result {
	const name = FinalMaxID
	var p problems
	want := map[string]int64{}
	for _, op := range ops {
		if op.Kind == history.Reserve && op.OK && op.Last > want[op.Tag] {
			want[op.Tag] = op.Last
		}
	}
	if len(final) == 0 {
		return fail(name, 0, "no member answered the final reads")
	}
	for _, tag := range tags {
		var ref *int64
		for member, m := range final {
			v, ok := m[tag]
			if !ok {
				p.add("member %s: no final max_id for %q", member, tag)
				continue
			}
			if ref == nil {
				ref = &v
			} else if *ref != v {
				p.add("tag %q: members disagree (%d vs %d at %s)", tag, *ref, v, member)
			}
			if v < want[tag] {
				p.add("tag %q: member %s max_id %d below acknowledged segment end %d", tag, member, v, want[tag])
			}
		}
	}
	if p.n > 0 {
		return fail(name, len(tags), "%s", p.String())
	}
	return pass(name, len(tags), "%d tags on %d members: %s", len(tags), len(final), fmtMax(final, tags))
}

func fmtMax(final map[string]map[string]int64, tags []string) string {
	for _, m := range final {
		s := ""
		for _, t := range tags {
			s += fmt.Sprintf("%s=%d ", t, m[t])
		}
		return s
	}
	return ""
}
