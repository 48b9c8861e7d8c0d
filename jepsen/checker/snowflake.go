package checker

import (
	"sort"
	"time"

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
//
// Starting and stopping: only answered IDs are judged (a starting
// allocsvr answers 503 until it holds its worker ID); nothing is excused.
func WorkerTimeline(ops []*history.Op, l Layout) Result {
	const name = SnowflakeTimeline
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

// WorkerExclusive checks that no two process lifetimes served the same
// worker ID at the same time. A lifetime may legitimately serve a worker
// ID, lose it (self-fenced), and serve it again after another holder came
// and went; but a hand-over to another holder and back takes at least a
// lease TTL (the other holder's lease must expire). So two successful
// responses of one lifetime less than maxGap (below the lease TTL) apart
// prove it held the worker ID throughout [first return, second call]: a
// response of another lifetime lying entirely inside such a window is an
// overlap.
//
// Starting and stopping: a starting twin answers 503 until it holds the
// worker ID, and a stopping holder answers until it stops; only answers
// are judged, and nothing is excused.
func WorkerExclusive(ops []*history.Op, l Layout, maxGap time.Duration) Result {
	const name = SnowflakeExclusive
	var p problems
	groups := byWorker(ops, l, func(*history.Op) {})
	n := 0
	for w, g := range groups {
		byLife := map[lifeKey][]*history.Op{}
		for _, op := range g {
			n++
			k := lifeKey{target: op.Target, life: op.Life, pid: op.Pid}
			byLife[k] = append(byLife[k], op)
		}
		if len(byLife) < 2 {
			continue
		}
		var wins []window
		for k, lops := range byLife {
			wins = append(wins, holdWindows(k, lops, int64(maxGap))...)
		}
		sort.Slice(wins, func(i, j int) bool { return wins[i].from < wins[j].from })
		for _, op := range g {
			k := lifeKey{target: op.Target, life: op.Life, pid: op.Pid}
			for _, win := range wins {
				if win.from > op.Call {
					break
				}
				if win.key != k && op.Return <= win.to {
					p.add("worker %d: %s life %d (pid %d) served op %d while %s life %d (pid %d) held it from %.3fs to %.3fs",
						w, op.Target, op.Life, op.Pid, op.ID, win.key.target, win.key.life, win.key.pid, float64(win.from)/1e9, float64(win.to)/1e9)
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

// window is a span of the run clock during which one lifetime provably
// held a worker ID.
type window struct {
	key      lifeKey
	from, to int64
}

// holdWindows returns the windows [a.Return, b.Call] for responses a, b
// of one lifetime where a returned before b was called and b.Return -
// a.Call is below maxGap: a served at some instant in [a.Call, a.Return],
// b at some instant in [b.Call, b.Return], less than maxGap apart, so the
// lifetime held the worker ID between them. a is the response with the
// latest return among those called before b. Windows chained through
// one response (its serving instant ends one and starts the next) merge.
func holdWindows(k lifeKey, ops []*history.Op, maxGap int64) []window {
	sorted := append([]*history.Op{}, ops...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	var out []window
	var a, lastB *history.Op
	for _, b := range sorted {
		if a != nil && b.Call > a.Return && b.Return-a.Call < maxGap {
			if a == lastB {
				out[len(out)-1].to = b.Call
			} else {
				out = append(out, window{key: k, from: a.Return, to: b.Call})
			}
			lastB = b
		}
		if a == nil || b.Return > a.Return {
			a = b
		}
	}
	return out
}
