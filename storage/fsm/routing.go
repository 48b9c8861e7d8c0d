package fsm

import (
	"slices"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// run is a maximal run of consecutive sections [first, last] with one
// owner and one pending next owner ("" for none). A space's runs cover
// 0..sections-1 in order, and no two neighbours are equal (compact), so a
// table stays about as long as the number of allocsvrs, whatever the
// number of sections.
type run struct {
	first, last uint64
	owner, next string
}

func (r run) sameOwners(o run) bool { return r.owner == o.owner && r.next == o.next }

// compact merges neighbouring runs with the same owner and next owner.
func compact(rs []run) []run {
	out := rs[:0]
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1].sameOwners(r) && out[n-1].last+1 == r.first {
			out[n-1].last = r.last
			continue
		}
		out = append(out, r)
	}
	return out
}

// paint applies f to sections [first, last] (clipped to the space),
// splitting the runs it cuts through, and keeps the list compact.
func (sp *space) paint(first, last uint64, f func(run) run) {
	last = min(last, sp.sections-1)
	if first > last {
		return
	}
	out := make([]run, 0, len(sp.runs)+2)
	for _, r := range sp.runs {
		if r.last < first || r.first > last {
			out = append(out, r)
			continue
		}
		if r.first < first {
			out = append(out, run{r.first, first - 1, r.owner, r.next})
		}
		mid := f(r)
		mid.first, mid.last = max(r.first, first), min(r.last, last)
		out = append(out, mid)
		if r.last > last {
			out = append(out, run{last + 1, r.last, r.owner, r.next})
		}
	}
	sp.runs = compact(out)
}

// unown makes every section of [first, last] owned by node unowned.
func (sp *space) unown(node string, first, last uint64) {
	sp.paint(first, last, func(r run) run {
		if r.owner == node {
			r.owner, r.next = "", ""
		}
		return r
	})
}

// targets splits sections 0..n-1 into len(live) contiguous, even runs:
// section s goes to live[s*len(live)/n], so member i's first section is
// ceil(i*n/len(live)). With no live member, one run owned by "".
func targets(n uint64, live []string) []run {
	if len(live) == 0 {
		return []run{{first: 0, last: n - 1}}
	}
	k := uint64(len(live))
	out := make([]run, 0, len(live))
	for i := range k {
		first, end := ceilDiv(i*n, k), ceilDiv((i+1)*n, k)
		if first < end {
			out = append(out, run{first: first, last: end - 1, owner: live[i]})
		}
	}
	return out
}

func ceilDiv(a, b uint64) uint64 { return (a + b - 1) / b }

// rebalance moves every space's sections toward the even split over the
// members live at now (sorted by node_id). Where (owner, next owner,
// target) is constant:
//   - the owner is the target: it keeps the sections, nothing is pending;
//   - the owner is "" or not live (its lease expired, it released or
//     left, so it serves none of them): the target owns them at once;
//   - the owner is live and another member is the target: the owner keeps
//     them and the target becomes next owner, until the owner releases
//     them or its lease expires.
//
// A space whose runs changed gets routing_version+1. Deterministic: it
// reads the member table and now only.
func (st *fsmState) rebalance(now int64) {
	if now < st.restoreFenceMs {
		// A restored cluster grants no section before the old cluster's
		// leases have all ended; the first heartbeat after that does.
		return
	}
	live := st.liveMembers(now)
	for _, name := range sortedKeys(st.spaces) {
		sp := st.spaces[name]
		runs := st.rebalanced(sp, targets(sp.sections, live), now)
		if !slices.Equal(runs, sp.runs) {
			sp.runs = runs
			sp.routingVersion++
		}
	}
}

// rebalanced is sp's new run list: a sweep over the intersections of its
// current runs and the target runs (both cover every section in order).
func (st *fsmState) rebalanced(sp *space, target []run, now int64) []run {
	out := make([]run, 0, len(sp.runs)+len(target))
	i, j := 0, 0
	for i < len(sp.runs) && j < len(target) {
		cur, tgt := sp.runs[i], target[j]
		r := run{first: max(cur.first, tgt.first), last: min(cur.last, tgt.last), owner: cur.owner}
		switch {
		case cur.owner == tgt.owner:
		case cur.owner == "" || !st.seqLive(cur.owner, now):
			r.owner = tgt.owner
		case plantedNoHandoverWait():
			r.owner = tgt.owner
		default:
			r.next = tgt.owner
		}
		out = append(out, r)
		if cur.last == r.last {
			i++
		}
		if tgt.last == r.last {
			j++
		}
	}
	return compact(out)
}

// table is sp's routing table as the store answers it: owner URLs and
// leases come from the member table.
func (st *fsmState) table(sp *space) *seqsvrv1.RoutingTable {
	t := &seqsvrv1.RoutingTable{Space: sp.name, KeyCount: sp.keyCount, SectionSize: sp.size, RoutingVersion: sp.routingVersion,
		Sections: make([]*seqsvrv1.SectionRange, 0, len(sp.runs))}
	for _, r := range sp.runs {
		sr := &seqsvrv1.SectionRange{FirstSection: r.first, LastSection: r.last, Owner: r.owner, NextOwner: r.next}
		if m, ok := st.seqMembers[r.owner]; ok {
			sr.OwnerUrl, sr.LeaseExpiresMs = m.GetUrl(), m.GetLeaseExpiresMs()
		}
		t.Sections = append(t.Sections, sr)
	}
	return t
}

// tables is every space's table in name order.
func (st *fsmState) tables() []*seqsvrv1.RoutingTable {
	out := make([]*seqsvrv1.RoutingTable, 0, len(st.spaces))
	for _, name := range sortedKeys(st.spaces) {
		out = append(out, st.table(st.spaces[name]))
	}
	return out
}
