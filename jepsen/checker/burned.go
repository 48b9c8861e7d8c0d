package checker

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// SoloPrefix names the tags each of which only one allocsvr serves (the
// harness sends an allocsvr's solo tag to that allocsvr alone). No other
// process reserves their segments, so within one lifetime of that
// allocsvr the IDs it hands out are consecutive: every segment it
// reserves lies just above the previous one, and it hands each one out
// from first to last.
const SoloPrefix = "solo-"

// NoBurnedIDs checks, per solo tag and per lifetime of its allocsvr, that
// the IDs handed out have no hole that the lifetime's calls of unknown
// outcome cannot explain: an ID skipped inside a lifetime was burned
// (dropped from a buffer, or a retried reservation that reserved a second
// segment). A call answered by the allocsvr with an error (unavailable
// because its buffers are empty, not_found, ...) took nothing; a call that
// timed out or lost its connection may have taken up to its count, and
// those counts are the lifetime's allowance. Across lifetimes holes are
// allowed: a killed process loses its buffers.
//
// Starting and stopping: a starting allocsvr answers 503 "starting"
// before any handler runs, so it took nothing and adds nothing to the
// allowance; a stopping one (SIGTERM) answers its in-flight calls as
// usual and drops the rest, whose calls count as unknown outcomes.
//
// One hole more is allowed in a lifetime that follows another (a restart)
// when its size is that of one segment (within seg): a process killed
// while cut off from the stores leaves its in-flight ReserveSegment in an
// orphaned socket, which the kernel still delivers once the cut heals, so
// the store may commit that reservation after the next lifetime began.
// The dead lifetime's loader had at most one reservation in flight per tag
// (its retries share a request_id), so one segment per tag per restart.
// A hole smaller than the tag's step (a dropped carry) is never excused.
func NoBurnedIDs(ops []*history.Op, seg SegmentBounds) Result {
	const name = SegmentNoBurned
	type life struct {
		ids      []int64
		allow    int
		target   string
		lifeNo   int
		pid      int
		tag      string
		failures int
	}
	lives := map[lifeKey]*life{}
	for _, op := range ops {
		if op.Kind != history.NextIDs || !strings.HasPrefix(op.Tag, SoloPrefix) {
			continue
		}
		k := lifeKey{target: op.Target, life: op.Life, pid: op.Pid, tag: op.Tag}
		l := lives[k]
		if l == nil {
			l = &life{target: op.Target, lifeNo: op.Life, pid: op.Pid, tag: op.Tag}
			lives[k] = l
		}
		switch {
		case op.OK && op.Life == op.LifeReturn:
			l.ids = append(l.ids, op.IDs...)
		case op.OK:
			// Answered by a later lifetime than it was sent to (a restart
			// in between): its IDs belong to that one; the call's own
			// lifetime may have taken some too.
			l.allow += op.Count
		case !answeredByAlloc(op):
			l.allow += op.Count
			l.failures++
		}
	}
	keys := make([]lifeKey, 0, len(lives))
	for k := range lives {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	var p problems
	checked, ids, orphans := 0, 0, 0
	for _, k := range keys {
		l := lives[k]
		if len(l.ids) == 0 {
			continue
		}
		checked++
		ids += len(l.ids)
		slices.Sort(l.ids)
		holes, missing, jumps := []string{}, 0, 0
		for i := 1; i < len(l.ids); i++ {
			if gap := l.ids[i] - l.ids[i-1] - 1; gap > 0 {
				if seg.JumpMin > 0 && gap >= seg.JumpMin && jumps < seg.Jumps {
					jumps++ // a restore's jump, not a burn
					continue
				}
				missing += int(gap)
				if len(holes) < 3 {
					holes = append(holes, fmt.Sprintf("(%d, %d)", l.ids[i-1], l.ids[i]))
				}
			}
		}
		if l.lifeNo > 1 && missing > l.allow && seg.Max > 0 {
			// Excuse the largest hole when it is one orphaned segment.
			largest := int64(0)
			for i := 1; i < len(l.ids); i++ {
				if g := l.ids[i] - l.ids[i-1] - 1; seg.JumpMin == 0 || g < seg.JumpMin {
					largest = max(largest, g)
				}
			}
			if largest >= seg.Min && largest <= seg.Max && missing-int(largest) <= l.allow {
				orphans++
				continue
			}
		}
		if missing > l.allow {
			p.add("tag %s on %s life %d (pid %d): %d IDs skipped between the %d it handed out, holes %s; its %d calls of unknown outcome explain at most %d",
				l.tag, l.target, l.lifeNo, l.pid, missing, len(l.ids), strings.Join(holes, " "), l.failures, l.allow)
		}
	}
	if p.n > 0 {
		return fail(name, ids, "%s", p.String())
	}
	if checked == 0 {
		return pass(name, 0, "no solo-tag IDs in this history")
	}
	return pass(name, ids, "%d IDs of solo tags in %d allocsvr lifetimes, none burned (%d lifetimes with one segment-sized hole a killed predecessor's late reservation explains)", ids, checked, orphans)
}

// SegmentBounds are the sizes a solo tag's segments can have: its stored
// step (Min) up to the allocsvrs' --max-step (Max).
//
// Jumps is how many restores and recoveries the history spans, each of
// which moves every counter up by at least JumpMin (the jump's floor);
// a lifetime that lived through them may have one hole of at least
// JumpMin per jump: the buffer it kept from the lost cluster, then the
// first segment of the restored one (docs/fault-injection.md).
type SegmentBounds struct {
	Min, Max int64
	Jumps    int
	JumpMin  int64
}

// answeredByAlloc reports whether a failed NextIDs is the allocsvr's own
// answer (it took no ID): a definite code, or unavailable with the
// allocator's reason (which names the tag), as opposed to a timeout or a
// broken connection. A plain-text 503 (connect-go's "503 Service
// Unavailable" when the body is no Connect error) is the server's answer
// before any handler ran: a starting process's 503 "starting", or a
// connection shed over --max-conns. It took nothing either.
func answeredByAlloc(op *history.Op) bool {
	switch op.Code {
	case "not_found", "invalid_argument", "resource_exhausted", "failed_precondition":
		return true
	case "unavailable":
		return strings.Contains(op.Err, fmt.Sprintf("tag %q", op.Tag)) || op.Err == plain503
	}
	return false
}

// plain503 is a Connect call's error for a 503 whose body is no Connect
// error.
const plain503 = "unavailable: 503 Service Unavailable"
