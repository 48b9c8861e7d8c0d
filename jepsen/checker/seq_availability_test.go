package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// at is a NextSeq of key 7 on target, called at call s and returning
// 100 ms later, answered (ok) or failed.
func at(target string, call float64, ok bool) *history.Op {
	c := int64(call * float64(time.Second))
	op := &history.Op{Kind: history.SeqNext, Target: target, Space: "s", Keys: []uint64{7}, Call: c, Return: c + int64(100*time.Millisecond), OK: ok}
	if ok {
		op.Seqs = []int64{1}
	} else {
		op.Code = "unavailable"
	}
	return op
}

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// run is an answer at from, calls failing every 0.5 s from from+1 to to
// (the last one returning at to+0.1), and an answer at to+0.5.
func run(target string, from, to float64) []*history.Op {
	out := []*history.Op{at(target, from, true)}
	for c := from + 1; c <= to+1e-9; c += 0.5 {
		out = append(out, at(target, c, false))
	}
	return append(out, at(target, to+0.5, true))
}

func TestSeqAvailability(t *testing.T) {
	kill := []SeqScale{{At: sec(10), Bound: sec(4), What: "seq-kill-alloc a2", Target: "a2"}}
	for _, tc := range []struct {
		name    string
		ops     []*history.Op
		scale   []SeqScale
		excused []Span
		down    map[string][]Span
		pass    bool
		detail  string
	}{
		{name: "short blip", ops: run("a1", 1, 3.5), pass: true},
		{name: "a pause in the calls is no outage", ops: []*history.Op{at("a1", 1, true), at("a1", 2, false), at("a1", 30, true)}, pass: true},
		{name: "unexplained outage over 2 s", ops: run("a1", 1, 4.5),
			detail: "key s/7: no answer from 2s to 4.6s"},
		{name: "within a death's bound", ops: run("a1", 9.5, 13.5), scale: kill, pass: true},
		{name: "past a death's bound", ops: run("a1", 9.5, 14.5), scale: kill,
			detail: "nothing explains 14s onwards"},
		{name: "excused store fault", ops: run("a1", 1, 9), excused: []Span{{sec(1.5), sec(9.5)}}, pass: true},
		{name: "excuse ends too early", ops: run("a1", 1, 12), excused: []Span{{sec(1.5), sec(8)}},
			detail: "nothing explains 8s onwards"},
		{name: "failures on a down allocsvr do not count", ops: append(run("a2", 1.5, 5), at("a1", 1, true), at("a1", 9, true)),
			down: map[string][]Span{"a2": {{sec(1.5), sec(6)}}}, pass: true},
		{name: "a call that never left the client does not count", ops: []*history.Op{at("a1", 1, true), func() *history.Op { o := at("a1", 2, false); o.NotSent = true; return o }(), at("a1", 9, true)}, pass: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := SeqAvailability(tc.ops, tc.scale, tc.excused, tc.down)
			if r.OK != tc.pass || !strings.Contains(r.Detail, tc.detail) {
				t.Fatalf("ok %v, want %v; detail %q, want it to contain %q", r.OK, tc.pass, r.Detail, tc.detail)
			}
		})
	}
	if r := SeqAvailability(nil, nil, nil, nil); !r.OK || r.Checked != 0 {
		t.Fatalf("empty history: %+v", r)
	}
}
