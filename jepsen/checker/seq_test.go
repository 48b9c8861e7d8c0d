package checker

import (
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// seqOp is a successful per-key call on space "s"; vals pairs keys and
// values: key, value, key, value...
func seqOp(id int64, kind string, call, ret int64, vals ...int64) *history.Op {
	op := &history.Op{ID: id, Kind: kind, Target: "a1", Space: "s", Call: call, Return: ret, OK: true}
	for i := 0; i+1 < len(vals); i += 2 {
		op.Keys = append(op.Keys, uint64(vals[i]))
		op.Seqs = append(op.Seqs, vals[i+1])
	}
	return op
}

func next(id, call, ret, key, v int64) *history.Op {
	return seqOp(id, history.SeqNext, call, ret, key, v)
}

func TestSeqChecks(t *testing.T) {
	for _, tc := range []struct {
		name          string
		ops           []*history.Op
		order, unique bool // want pass
		detail        string
	}{
		{name: "sequential", ops: []*history.Op{next(1, 0, 1, 7, 1), next(2, 2, 3, 7, 2), next(3, 4, 5, 7, 10)}, order: true, unique: true},
		// Concurrent calls may answer in either order.
		{name: "concurrent any order", ops: []*history.Op{next(1, 0, 10, 7, 5), next(2, 1, 9, 7, 3), next(3, 11, 12, 7, 6)}, order: true, unique: true},
		{name: "next goes back", ops: []*history.Op{next(1, 0, 1, 7, 5), next(2, 2, 3, 7, 4)}, unique: true,
			detail: "key s/7: op 2 (seq-next on a1, 2ns..3ns) answered 4, not above the 5 answered by op 1"},
		{name: "next repeats after return", ops: []*history.Op{next(1, 0, 1, 7, 5), next(2, 2, 3, 7, 5)}, detail: "value 5 answered by"},
		{name: "concurrent duplicate", ops: []*history.Op{next(1, 0, 5, 7, 5), next(2, 1, 6, 7, 5)}, order: true, detail: "value 5 answered by op 1"},
		// Keys are independent; so are spaces.
		{name: "other keys", ops: []*history.Op{next(1, 0, 1, 7, 5), next(2, 2, 3, 8, 1), seqOp(3, history.SeqCurrent, 4, 5, 8, 1, 9, 0)}, order: true, unique: true},
		{name: "current after next", ops: []*history.Op{next(1, 0, 1, 7, 5), seqOp(2, history.SeqCurrent, 2, 3, 7, 5)}, order: true, unique: true},
		{name: "current misses a returned next", ops: []*history.Op{next(1, 0, 1, 7, 5), seqOp(2, history.SeqCurrent, 2, 3, 7, 4)}, unique: true,
			detail: "read 4, below the 5 answered by op 1"},
		// A current concurrent with the next may or may not see it.
		{name: "current concurrent", ops: []*history.Op{next(1, 0, 5, 7, 5), seqOp(2, history.SeqCurrent, 1, 3, 7, 4)}, order: true, unique: true},
		{name: "next not above a current", ops: []*history.Op{seqOp(1, history.SeqCurrent, 0, 1, 7, 9), next(2, 2, 3, 7, 9)}, unique: true,
			detail: "answered 9, not above the 9 answered by op 1 (seq-current"},
		{name: "next above a current", ops: []*history.Op{seqOp(1, history.SeqCurrent, 0, 1, 7, 9), next(2, 2, 3, 7, 10)}, order: true, unique: true},
		// NextSeqs: each occurrence counts, in order, strictly increasing.
		{name: "nexts repeats", ops: []*history.Op{seqOp(1, history.SeqNexts, 0, 1, 7, 1, 8, 1, 7, 2), next(2, 2, 3, 7, 3)}, order: true, unique: true},
		{name: "nexts repeats not increasing", ops: []*history.Op{seqOp(1, history.SeqNexts, 0, 1, 7, 2, 7, 2)},
			detail: "answered 2 after 2 for a later occurrence"},
		{name: "nexts lowest occurrence checked", ops: []*history.Op{next(1, 0, 1, 7, 5), seqOp(2, history.SeqNexts, 2, 3, 7, 5, 7, 6)},
			detail: "answered 5, not above the 5"},
		{name: "next below a nexts' highest occurrence", ops: []*history.Op{seqOp(1, history.SeqNexts, 0, 1, 7, 5, 7, 6), next(2, 2, 3, 7, 6)},
			detail: "answered 6, not above the 6"},
		// Unknown outcomes order nothing and their values exist nowhere (even
		// when the recorder kept some).
		{name: "unknown ignored", ops: []*history.Op{unknownOp(next(1, 0, 1, 7, 9)), next(2, 2, 3, 7, 1), unknownOp(seqOp(3, history.SeqCurrent, 4, 5, 7, 0))}, order: true, unique: true},
		{name: "malformed answer", ops: []*history.Op{{ID: 1, Kind: history.SeqNexts, Space: "s", OK: true, Keys: []uint64{1, 2}, Seqs: []int64{1}}}, unique: true,
			detail: "answered 1 values for 2 keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, u := SeqOrder(tc.ops), SeqUnique(tc.ops)
			if o.OK != tc.order || u.OK != tc.unique {
				t.Fatalf("order ok=%v (want %v): %s\nunique ok=%v (want %v): %s", o.OK, tc.order, o.Detail, u.OK, tc.unique, u.Detail)
			}
			if tc.detail != "" && !strings.Contains(o.Detail+u.Detail, tc.detail) {
				t.Fatalf("no %q in the details:\n%s\n%s", tc.detail, o.Detail, u.Detail)
			}
			if o.Undecided || u.Undecided {
				t.Fatal("a per-key check marked undecided")
			}
		})
	}
}

// TestSeqNothing: a history without per-key calls passes, and says so.
func TestSeqNothing(t *testing.T) {
	for _, r := range []Result{SeqOrder(nil), SeqUnique(nil)} {
		if !r.OK || r.Checked != 0 || r.Detail != noSeqCalls {
			t.Fatalf("%+v", r)
		}
	}
}

// TestSeqOrderScales: a long history of one key checks in O(n log n);
// the last call going back is found.
func TestSeqOrderScales(t *testing.T) {
	var ops []*history.Op
	for i := range int64(200_000) {
		ops = append(ops, next(i+1, 2*i, 2*i+1, 3, i+1))
	}
	if r := SeqOrder(ops); !r.OK || r.Checked != len(ops) {
		t.Fatalf("valid long history: %+v", r)
	}
	ops[len(ops)-1].Seqs[0] = 17
	if r := SeqOrder(ops); r.OK {
		t.Fatal("a value going back at the end of a long history accepted")
	}
}
