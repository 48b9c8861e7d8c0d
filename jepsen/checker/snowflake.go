package checker

import (
	"sort"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// Layout is the snowflake bit layout (from an allocsvr's Status).
type Layout struct {
	EpochMs                  int64
	WorkerBits, SequenceBits int
}

// Worker extracts the worker ID of id.
func (l Layout) Worker(id int64) int64 {
	return (id >> l.SequenceBits) & (1<<l.WorkerBits - 1)
}

// Timestamp extracts the millisecond timestamp (since the Unix epoch).
func (l Layout) Timestamp(id int64) int64 {
	return id>>(l.SequenceBits+l.WorkerBits) + l.EpochMs
}

// byWorker splits successful snowflake ops by worker ID; an op whose IDs
// span two workers is reported through bad.
func byWorker(ops []*history.Op, l Layout, bad func(*history.Op)) map[int64][]*history.Op {
	out := map[int64][]*history.Op{}
	for _, op := range ops {
		if op.Kind != history.Snowflake || !op.OK || len(op.IDs) == 0 {
			continue
		}
		w := l.Worker(op.IDs[0])
		for _, id := range op.IDs[1:] {
			if l.Worker(id) != w {
				bad(op)
				break
			}
		}
		out[w] = append(out[w], op)
	}
	return out
}

// WorkerTimeline checks, per worker ID and across process lifetimes and
// clock steps, that an ID response called after another returned holds
// only larger IDs: so a snowflake timestamp never goes backwards for a
// worker, whoever holds it.
func WorkerTimeline(ops []*history.Op, l Layout) Result {
	const name = "snowflake per-worker timestamps increasing"
	var p problems
	groups := byWorker(ops, l, func(op *history.Op) { p.add("op %d on %s mixes worker IDs", op.ID, op.Target) })
	n := 0
	for w, g := range groups {
		n += len(g)
		realTimeIncreasing(g, func(prev, cur *history.Op) {
			p.add("worker %d: op %d on %s life %d (ts %d) called after op %d on %s life %d (ts %d) returned",
				w, cur.ID, cur.Target, cur.Life, l.Timestamp(cur.IDs[0]), prev.ID, prev.Target, prev.Life, l.Timestamp(prev.IDs[len(prev.IDs)-1]))
		})
	}
	if p.n > 0 {
		return fail(name, n, "%s", p.String())
	}
	return pass(name, n, "%d responses over %d worker IDs", n, len(groups))
}

type span struct {
	key             lifeKey
	minRet, maxCall int64
}

// WorkerExclusive checks that no two process lifetimes served the same
// worker ID at the same time. Process B provably served during
// [B.firstReturn, B.lastCall]; an op of A lying entirely inside that window
// proves an overlap.
func WorkerExclusive(ops []*history.Op, l Layout) Result {
	const name = "snowflake worker IDs held by one live process"
	var p problems
	groups := byWorker(ops, l, func(*history.Op) {})
	n := 0
	for w, g := range groups {
		spans := map[lifeKey]*span{}
		for _, op := range g {
			n++
			k := lifeKey{target: op.Target, life: op.Life}
			s := spans[k]
			if s == nil {
				s = &span{key: k, minRet: op.Return, maxCall: op.Call}
				spans[k] = s
			}
			s.minRet = min(s.minRet, op.Return)
			s.maxCall = max(s.maxCall, op.Call)
		}
		if len(spans) < 2 {
			continue
		}
		list := make([]*span, 0, len(spans))
		for _, s := range spans {
			list = append(list, s)
		}
		sort.Slice(list, func(i, j int) bool { return list[i].minRet < list[j].minRet })
		for _, op := range g {
			for _, s := range list {
				if s.key.target == op.Target && s.key.life == op.Life {
					continue
				}
				if op.Call >= s.minRet && op.Return <= s.maxCall {
					p.add("worker %d: %s life %d served op %d while %s life %d was serving it", w, op.Target, op.Life, op.ID, s.key.target, s.key.life)
					break
				}
			}
		}
	}
	if p.n > 0 {
		return fail(name, n, "%s", p.String())
	}
	return pass(name, n, "%d responses, no worker ID served by two live processes", n)
}
