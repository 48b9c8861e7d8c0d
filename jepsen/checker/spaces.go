package checker

import (
	"fmt"
	"slices"
	"sort"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// SpaceReadsName names the SpaceReads check.
const SpaceReadsName = "GetSpace/GetRouting consistent, routing_version never back"

// SpaceReads checks the answered GetSpace and GetRouting calls of each
// space against what the store promises: both are linearizable reads (on
// the leader, after its term's barrier and a VerifyLeader round, whichever
// member was asked), a space never changes its key_count, section_size,
// step or create time and is never deleted, and a space's routing_version
// grows on every change of its table (RoutingTable). So, per space:
//
//   - Every GetSpace answers the same fields, with section_count =
//     ceil(key_count / section_size); every GetRouting the same key_count
//     and section_size, and runs that cover sections 0..section_count-1 in
//     order, each once.
//   - Two GetRouting answers with the same routing_version have the same
//     runs (owners and pending next owners). (The store breaks this when
//     the last live allocsvr leaves or releases sections: its sections go
//     unowned without a new version; see docs/fault-injection.md.)
//   - In real time the routing_version never goes down: a GetRouting
//     that began after another answered returns at least its version, and
//     at least the routing_version of every per-key Connect call
//     (NextSeq, NextSeqs, CurrentSeqs) answered before it began (an
//     allocsvr answers with the version of the table it learned from the
//     store, which the store had committed).
//   - Neither answers not_found once any operation on the space was
//     answered before it began.
//
// The answers carry no section max_seq (neither Space nor RoutingTable
// has one), so the per-key durability promise is the per-key checkers'
// (SeqOrder: CurrentSeqs at least every NextSeq answered before it).
// A history that spans a store restore must be cut at the first one
// before this check: the restored cluster's tables start from the
// backup's versions.
//
// Starting and stopping: a starting store answers unavailable, never
// not_found, and a stopping one's dropped calls fail: neither is judged;
// nothing is excused.
func SpaceReads(ops []*history.Op) Result {
	var p problems
	type versioned struct {
		op      *history.Op
		version uint64
	}
	bySpace := map[string][]versioned{} // every answered op carrying a routing_version
	infos := map[string]*history.Op{}   // the first GetSpace answer
	shapes := map[string]*history.Op{}  // the first GetRouting answer
	runs := map[string]map[uint64]*history.Op{}
	evidence := spaceEvidence(ops)
	n := 0
	for _, op := range ops {
		if op.Kind != history.GetSpace && op.Kind != history.GetRouting {
			if op.OK && op.RoutingVersion > 0 && op.Space != "" {
				bySpace[op.Space] = append(bySpace[op.Space], versioned{op, op.RoutingVersion})
			}
			continue
		}
		if op.Answered() && op.Code == history.CodeNotFound {
			n++
			if w, ok := evidence[op.Space].latestBefore(op.Call); ok {
				p.add("%s op %d (%s): space %q not_found, though op %d (%s) answered on it before", op.Kind, op.ID, op.Target, op.Space, w.ID, w.Kind)
			}
			continue
		}
		if !op.OK {
			continue
		}
		n++
		switch {
		case op.Kind == history.GetSpace && op.SpaceInfo != nil:
			si := op.SpaceInfo
			if si.SectionSize == 0 || si.SectionCount != (si.KeyCount+si.SectionSize-1)/si.SectionSize {
				p.add("get-space op %d (%s): section_count %d for key_count %d and section_size %d", op.ID, op.Target, si.SectionCount, si.KeyCount, si.SectionSize)
			}
			first, ok := infos[op.Space]
			if !ok {
				infos[op.Space] = op
			} else if *first.SpaceInfo != *si {
				p.add("get-space op %d (%s) answered %+v for %q, op %d (%s) %+v", op.ID, op.Target, *si, op.Space, first.ID, first.Target, *first.SpaceInfo)
			}
		case op.Kind == history.GetRouting && op.Routing != nil:
			rt := op.Routing
			bySpace[op.Space] = append(bySpace[op.Space], versioned{op, rt.Version})
			if msg := coverage(rt); msg != "" {
				p.add("get-routing op %d (%s) version %d: %s", op.ID, op.Target, rt.Version, msg)
			}
			if first, ok := shapes[op.Space]; !ok {
				shapes[op.Space] = op
			} else if first.Routing.KeyCount != rt.KeyCount || first.Routing.SectionSize != rt.SectionSize {
				p.add("get-routing op %d (%s): key_count %d section_size %d, op %d (%s): %d %d", op.ID, op.Target, rt.KeyCount, rt.SectionSize,
					first.ID, first.Target, first.Routing.KeyCount, first.Routing.SectionSize)
			}
			if runs[op.Space] == nil {
				runs[op.Space] = map[uint64]*history.Op{}
			}
			if same, ok := runs[op.Space][rt.Version]; !ok {
				runs[op.Space][rt.Version] = op
			} else if !slices.Equal(same.Routing.Runs, rt.Runs) {
				p.add("get-routing ops %d (%s) and %d (%s) answered version %d with different runs: %v and %v", same.ID, same.Target, op.ID, op.Target, rt.Version, same.Routing.Runs, rt.Runs)
			}
		}
	}
	for space, si := range infos {
		if rt, ok := shapes[space]; ok && (rt.Routing.KeyCount != si.SpaceInfo.KeyCount || rt.Routing.SectionSize != si.SpaceInfo.SectionSize) {
			p.add("space %q: get-space op %d answered key_count %d section_size %d, get-routing op %d %d %d", space, si.ID,
				si.SpaceInfo.KeyCount, si.SpaceInfo.SectionSize, rt.ID, rt.Routing.KeyCount, rt.Routing.SectionSize)
		}
	}
	// Real time: sweep each space's GetRouting answers in call order
	// against every version answered before their call.
	for space, vs := range bySpace {
		byReturn := slices.Clone(vs)
		sort.Slice(byReturn, func(i, j int) bool { return byReturn[i].op.Return < byReturn[j].op.Return })
		sort.Slice(vs, func(i, j int) bool { return vs[i].op.Call < vs[j].op.Call })
		var top versioned
		j := 0
		for _, b := range vs {
			if b.op.Kind != history.GetRouting {
				continue
			}
			for ; j < len(byReturn) && byReturn[j].op.Return < b.op.Call; j++ {
				if byReturn[j].version > top.version {
					top = byReturn[j]
				}
			}
			if b.version < top.version {
				p.add("space %q: get-routing op %d (%s) answered routing_version %d, below %d answered by op %d (%s on %s) before it began",
					space, b.op.ID, b.op.Target, b.version, top.version, top.op.ID, top.op.Kind, top.op.Target)
			}
		}
	}
	if p.n > 0 {
		return fail(SpaceReadsName, n, "%s", p.String())
	}
	if n == 0 {
		return pass(SpaceReadsName, 0, "no answered GetSpace or GetRouting in the history")
	}
	return pass(SpaceReadsName, n, "%d answered GetSpace/GetRouting calls: fields constant, tables whole, routing_version never below one answered earlier", n)
}

// coverage is what is wrong with rt's runs ("" when they cover every
// section once, in order).
func coverage(rt *history.Routing) string {
	if rt.SectionSize == 0 {
		return "section_size 0"
	}
	count := (rt.KeyCount + rt.SectionSize - 1) / rt.SectionSize
	next := uint64(0)
	for _, r := range rt.Runs {
		if r.First != next || r.Last < r.First {
			return fmt.Sprintf("runs %v do not cover the sections in order", rt.Runs)
		}
		next = r.Last + 1
	}
	if next != count {
		return fmt.Sprintf("runs %v do not cover all %d sections", rt.Runs, count)
	}
	return ""
}
