package checker

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// Per-key sequence checks (guarantee 8). Only successful calls count: a
// call whose outcome is unknown (a timeout, unavailable) may or may not
// have taken values, but no one ever saw them, so it orders nothing and
// its values exist nowhere in the history.
//
// Starting and stopping: a starting allocsvr's 503 "starting" and a
// stopping one's dropped calls are such failures; nothing is excused.

// noSeqCalls is the detail of a per-key check on a history without
// per-key calls (a run without per-key workers): nothing to check; the
// Progress check fails a run whose per-key calls all failed.
const noSeqCalls = "no answered per-key call in the history"

// seqKey is one key of one space: the unit guarantee 8 speaks about.
type seqKey struct {
	space string
	key   uint64
}

func (k seqKey) String() string { return fmt.Sprintf("%s/%d", k.space, k.key) }

// seqObs is what one successful call saw of one key: the smallest and the
// largest value answered for it (they differ only for a NextSeqs that
// named the key more than once).
type seqObs struct {
	op     *history.Op
	next   bool // NextSeq or NextSeqs: it took the values
	lo, hi int64
}

// seqObservations groups the successful per-key calls by key. Answers
// that are malformed in themselves (a value count unlike the key count,
// repeats of a key in one NextSeqs not strictly increasing) go to p.
func seqObservations(ops []*history.Op, p *problems) map[seqKey][]seqObs {
	out := map[seqKey][]seqObs{}
	for _, op := range ops {
		if !op.OK || (!op.SeqIncrements() && op.Kind != history.SeqCurrent) {
			continue
		}
		if len(op.Seqs) != len(op.Keys) {
			p.add("op %d (%s on %s) answered %d values for %d keys", op.ID, op.Kind, op.Target, len(op.Seqs), len(op.Keys))
			continue
		}
		seen := map[uint64]int{} // key -> its index in out[k] for this op
		for i, key := range op.Keys {
			k, v := seqKey{op.Space, key}, op.Seqs[i]
			j, again := seen[key]
			if !again {
				seen[key] = len(out[k])
				out[k] = append(out[k], seqObs{op: op, next: op.SeqIncrements(), lo: v, hi: v})
				continue
			}
			o := &out[k][j]
			if o.next && v <= o.hi {
				p.add("key %s: op %d (%s on %s) answered %d after %d for a later occurrence of the key in the same call", k, op.ID, op.Kind, op.Target, v, o.hi)
			}
			o.lo, o.hi = min(o.lo, v), max(o.hi, v)
		}
	}
	return out
}

// seqBest is the largest value among the calls that returned so far, and
// the call that saw it.
type seqBest struct {
	v  int64
	op *history.Op
}

func (b *seqBest) fold(o seqObs) {
	if b.op == nil || o.hi > b.v {
		b.v, b.op = o.hi, o.op
	}
}

// seqCall names a call with its interval on the run clock.
func seqCall(op *history.Op) string {
	return fmt.Sprintf("op %d (%s on %s, %s..%s)", op.ID, op.Kind, op.Target, time.Duration(op.Call), time.Duration(op.Return))
}

// SeqOrder checks guarantee 8's real-time order, key by key: a NextSeq
// (each occurrence of the key in a NextSeqs) that began after a NextSeq
// or CurrentSeqs of that key returned answers a larger value; a
// CurrentSeqs answers at least every NextSeq of the key that returned
// before it began. Per key the calls are swept once in call order
// against those sorted by return time, carrying the largest value
// returned so far: O(n log n).
func SeqOrder(ops []*history.Op) Result {
	var p problems
	obs := seqObservations(ops, &p)
	n := 0
	for _, k := range sortedSeqKeys(obs) {
		list := obs[k]
		n += len(list)
		byReturn := slices.Clone(list)
		slices.SortFunc(byReturn, func(a, b seqObs) int { return cmp.Compare(a.op.Return, b.op.Return) })
		byCall := slices.Clone(list)
		slices.SortFunc(byCall, func(a, b seqObs) int { return cmp.Compare(a.op.Call, b.op.Call) })
		var anyBest, nextBest seqBest // over every call / over the NextSeqs
		i := 0
		for _, b := range byCall {
			for ; i < len(byReturn) && byReturn[i].op.Return < b.op.Call; i++ {
				anyBest.fold(byReturn[i])
				if byReturn[i].next {
					nextBest.fold(byReturn[i])
				}
			}
			switch {
			case b.next && anyBest.op != nil && b.lo <= anyBest.v:
				p.add("key %s: %s answered %d, not above the %d answered by %s, which returned before it began", k, seqCall(b.op), b.lo, anyBest.v, seqCall(anyBest.op))
			case !b.next && nextBest.op != nil && b.lo < nextBest.v:
				p.add("key %s: %s read %d, below the %d answered by %s, which returned before it began", k, seqCall(b.op), b.lo, nextBest.v, seqCall(nextBest.op))
			}
		}
	}
	if p.n > 0 {
		return fail(SeqOrderName, n, "%s", p.String())
	}
	if n == 0 {
		return pass(SeqOrderName, 0, "%s", noSeqCalls)
	}
	return pass(SeqOrderName, n, "%d key observations over %d keys, every key in real-time order", n, len(obs))
}

// SeqUnique checks that no two successful NextSeq answers (counting each
// occurrence of a key in a NextSeqs) gave one key the same value.
func SeqUnique(ops []*history.Op) Result {
	type taken struct {
		v  int64
		op *history.Op
	}
	perKey := map[seqKey][]taken{}
	n := 0
	for _, op := range ops {
		if !op.OK || !op.SeqIncrements() || len(op.Seqs) != len(op.Keys) {
			continue
		}
		for i, key := range op.Keys {
			k := seqKey{op.Space, key}
			perKey[k] = append(perKey[k], taken{op.Seqs[i], op})
			n++
		}
	}
	var p problems
	for _, k := range sortedSeqKeys(perKey) {
		vs := perKey[k]
		slices.SortFunc(vs, func(a, b taken) int { return cmp.Compare(a.v, b.v) })
		for i := 1; i < len(vs); i++ {
			if vs[i].v == vs[i-1].v {
				p.add("key %s: value %d answered by %s and by %s", k, vs[i].v, seqCall(vs[i-1].op), seqCall(vs[i].op))
			}
		}
	}
	if p.n > 0 {
		return fail(SeqUniqueName, n, "%s", p.String())
	}
	if n == 0 {
		return pass(SeqUniqueName, 0, "%s", noSeqCalls)
	}
	return pass(SeqUniqueName, n, "%d values over %d keys, none answered twice", n, len(perKey))
}

// sortedSeqKeys orders a per-key map's keys, so that the examples a
// failing check lists are the same on every re-check.
func sortedSeqKeys[V any](m map[seqKey]V) []seqKey {
	keys := make([]seqKey, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b seqKey) int {
		return cmp.Or(cmp.Compare(a.space, b.space), cmp.Compare(a.key, b.key))
	})
	return keys
}

// SeqAvailabilityName names the SeqAvailability check.
const SeqAvailabilityName = "per-key sequences available (guarantee 9)"

// SeqBlip is how long any per-key error may last with nothing to explain
// it: guarantee 9's 2 s for a graceful stop or a newly started allocsvr.
const SeqBlip = 2 * time.Second

// Span is a stretch of the run clock.
type Span struct{ From, To time.Duration }

// SeqScale is one allocsvr event guarantee 9 speaks about, at At on the
// run clock: its keys must be answered again within Bound (the lease TTL
// plus 2 s after a death, SeqBlip after a graceful stop or a start).
type SeqScale struct {
	At     time.Duration
	Bound  time.Duration
	What   string // for the report: fault and target
	Target string
}

// SeqAvailability checks guarantee 9 key by key. A key's outage is a
// stretch of failed calls on it, as observed: from the call of the first
// failure after an answer (or the run's start) to the return of the last
// failure before the next answer (a stretch with no call, such as the end
// of a run, shows nothing either way). Every
// instant of an outage must be explained: within SeqBlip of its start,
// within an allocsvr event's bound after it (scale), or inside a fault
// the guarantee does not speak about (excused: store faults, partitions,
// clock steps, with their recovery). An outage with an unexplained
// instant fails the check. It also reports the share of per-key calls
// answered and the longest outage, explained or not.
//
// A failure on an allocsvr that was itself down at the call (down: killed,
// stopped, paused or cut off, by target) says nothing about its keys
// (clients should call another) and is left out, as is one that never
// left the client.
//
// Starting and stopping: a starting allocsvr answers 503 "starting", a
// stopping one fails the calls it drops after releasing its sections;
// both count as outages of the keys asked, excused only by the bounds
// above (SeqBlip after a start or a graceful stop, the lease TTL plus
// 2 s after a death).
func SeqAvailability(ops []*history.Op, scale []SeqScale, excused []Span, down map[string][]Span) Result {
	type call struct {
		call, ret time.Duration
		ok        bool
	}
	perKey := map[seqKey][]call{}
	total, okCalls, calm, calmOK := 0, 0, 0, 0
	for _, op := range ops {
		if op.Kind != history.SeqNext && op.Kind != history.SeqNexts && op.Kind != history.SeqCurrent {
			continue
		}
		if !op.OK && (op.NotSent || within(time.Duration(op.Call), down[op.Target])) {
			continue
		}
		total++
		if op.OK {
			okCalls++
		}
		if !within(time.Duration(op.Call), excused) {
			calm++
			if op.OK {
				calmOK++
			}
		}
		for _, key := range op.Keys {
			k := seqKey{op.Space, key}
			perKey[k] = append(perKey[k], call{time.Duration(op.Call), time.Duration(op.Return), op.OK})
		}
	}
	if total == 0 {
		return pass(SeqAvailabilityName, 0, "%s", noSeqCalls)
	}
	cover := func(from time.Duration) []Span {
		out := []Span{{from, from + SeqBlip}}
		for _, s := range scale {
			out = append(out, Span{s.At, s.At + s.Bound})
		}
		return append(out, excused...)
	}
	var p problems
	var longest Span
	var longestKey seqKey
	outages := 0
	for _, k := range sortedSeqKeys(perKey) {
		calls := perKey[k]
		slices.SortFunc(calls, func(a, b call) int { return cmp.Compare(a.call, b.call) })
		var from, last time.Duration
		down := false
		for _, c := range calls {
			switch {
			case !c.ok && !down:
				down, from, last = true, c.call, c.ret
			case !c.ok:
				last = max(last, c.ret)
			case down && last > from:
				down = false
				outages++
				out := Span{from, last}
				if out.To-out.From > longest.To-longest.From {
					longest, longestKey = out, k
				}
				if gap, ok := uncovered(out, cover(from)); !ok {
					p.add("key %s: no answer from %s to %s (%s); nothing explains %s onwards (no allocsvr event within its bound, no excused fault)",
						k, out.From.Round(time.Millisecond), out.To.Round(time.Millisecond), (out.To - out.From).Round(time.Millisecond), gap.Round(time.Millisecond))
				}
			}
		}
	}
	pct := func(a, b int) float64 {
		if b == 0 {
			return 100
		}
		return float64(a) / float64(b) * 100
	}
	detail := fmt.Sprintf("%.1f%% of %d per-key calls to reachable allocsvrs answered (%.1f%% of the %d made outside excused faults); %d outages over %d keys, the longest %s on key %s (%s..%s)",
		pct(okCalls, total), total, pct(calmOK, calm), calm, outages, len(perKey), (longest.To - longest.From).Round(time.Millisecond), longestKey,
		longest.From.Round(time.Millisecond), longest.To.Round(time.Millisecond))
	if p.n > 0 {
		return fail(SeqAvailabilityName, total, "%s; %s", detail, p.String())
	}
	return pass(SeqAvailabilityName, total, "%s; every outage within the bounds", detail)
}

// uncovered reports the first instant of out that no span of cover holds
// (ok false), or ok true when they cover all of it.
func uncovered(out Span, cover []Span) (time.Duration, bool) {
	slices.SortFunc(cover, func(a, b Span) int { return cmp.Compare(a.From, b.From) })
	at := out.From
	for _, c := range cover {
		if c.From > at {
			break
		}
		at = max(at, c.To)
		if at >= out.To {
			return 0, true
		}
	}
	return at, at >= out.To
}

// within reports whether t falls in one of spans.
func within(t time.Duration, spans []Span) bool {
	for _, s := range spans {
		if s.From <= t && t <= s.To {
			return true
		}
	}
	return false
}
