package checker

import (
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// A tiny history language for one tag "t": each helper is one call by
// client c over [call, ret].

func tagOp(kind string, c int, call, ret int64) *history.Op {
	return &history.Op{Client: c, Kind: kind, Tag: "t", Call: call, Return: ret, OK: true}
}

func failed(op *history.Op, code string) *history.Op {
	op.OK, op.Code = false, code
	return op
}

// unknownOp is a call that timed out: its outcome is unknown.
func unknownOp(op *history.Op) *history.Op { return failed(op, "deadline_exceeded") }

func create(c int, call, ret, start, step int64) *history.Op {
	op := tagOp(history.Create, c, call, ret)
	op.Start, op.Step, op.MaxID, op.TagStep = start, step, start, step
	return op
}

func update(c int, call, ret, step, maxID, gotStep int64) *history.Op {
	op := tagOp(history.Update, c, call, ret)
	op.Step, op.MaxID, op.TagStep = step, maxID, gotStep
	return op
}

// createAt is a create answered max_id (above its start: the tombstone).
func createAt(op *history.Op, maxID int64) *history.Op {
	op.MaxID = maxID
	return op
}

func del(c int, call, ret int64) *history.Op { return tagOp(history.Delete, c, call, ret) }

func read(c int, call, ret, maxID, step int64) *history.Op {
	op := tagOp(history.GetTag, c, call, ret)
	op.MaxID, op.TagStep = maxID, step
	return op
}

// reserveStep is a ReserveSegment of the tag's step (size 0).
func reserveStep(c int, call, ret, first, last, step int64) *history.Op {
	op := tagOp(history.Reserve, c, call, ret)
	op.First, op.Last, op.TagStep = first, last, step
	return op
}

func TestLinearizableTagLifecycle(t *testing.T) {
	cases := []struct {
		name string
		ok   bool
		ops  []*history.Op
	}{
		{"sequential lifecycle", true, []*history.Op{
			read(0, 0, 1, 0, 10), // created before the history: start 0, step 10
			failed(create(0, 2, 3, 5, 10), history.CodeAlreadyExists),
			reserveStep(0, 4, 5, 1, 10, 10),
			update(0, 6, 7, 20, 10, 20),
			reserveStep(0, 8, 9, 11, 30, 20),
			update(0, 10, 11, 0, 30, 20), // step 0 leaves the step alone
			del(0, 12, 13),
			failed(read(0, 14, 15, 0, 0), history.CodeNotFound),
			failed(reserveStep(0, 16, 17, 0, 0, 0), history.CodeNotFound),
			failed(update(0, 18, 19, 5, 0, 0), history.CodeNotFound),
			failed(del(0, 20, 21), history.CodeNotFound),
			create(0, 22, 23, 1000, 7), // a start above the tombstone (30) is kept
			reserveStep(0, 24, 25, 1001, 1007, 7),
			read(0, 26, 27, 1007, 7),
		}},
		{"concurrent update seen by an overlapping read", true, []*history.Op{
			read(0, 0, 1, 0, 10),
			update(1, 2, 10, 20, 0, 20),
			read(0, 3, 4, 0, 20),
		}},
		{"read sees an update before it was called", false, []*history.Op{
			read(0, 0, 1, 0, 10),
			read(0, 2, 3, 0, 20),
			update(1, 4, 5, 20, 0, 20),
		}},
		{"reservation uses the old step after an update returned", false, []*history.Op{
			update(1, 0, 1, 20, 0, 20),
			reserveStep(0, 2, 3, 1, 10, 10),
		}},
		{"update moves max_id", false, []*history.Op{
			reserveStep(0, 0, 1, 1, 10, 10),
			update(0, 2, 3, 20, 0, 20),
		}},
		{"read after a delete returned sees the tag", false, []*history.Op{
			del(0, 0, 1),
			read(1, 2, 3, 0, 10),
		}},
		{"create succeeds on an existing tag", false, []*history.Op{
			create(0, 0, 1, 5, 10),
		}},
		{"two deletes succeed with no create between", false, []*history.Op{
			del(0, 0, 1),
			del(1, 2, 3),
		}},
		{"re-created tag continues above the old max_id", true, []*history.Op{
			reserveStep(0, 0, 1, 1, 10, 10),
			del(0, 2, 3),
			createAt(create(0, 4, 5, 0, 10), 10),
			reserveStep(0, 6, 7, 11, 20, 10),
			read(0, 8, 9, 20, 10),
		}},
		{"re-created tag starting again at its start", false, []*history.Op{
			reserveStep(0, 0, 1, 1, 10, 10),
			del(0, 2, 3),
			create(0, 4, 5, 0, 10), // answers max_id 0: the old IDs again
		}},
		{"re-created tag hands out an ID of its deleted life", false, []*history.Op{
			reserveStep(0, 0, 1, 1, 10, 10),
			del(0, 2, 3),
			createAt(create(0, 4, 5, 5, 10), 10),
			reserveStep(0, 6, 7, 6, 15, 10),
		}},
		{"the tombstone survives several lives", true, []*history.Op{
			reserveStep(0, 0, 1, 1, 10, 10),
			del(0, 2, 3),
			createAt(create(0, 4, 5, 0, 5), 10),
			reserveStep(0, 6, 7, 11, 15, 5),
			del(0, 8, 9),
			createAt(create(0, 10, 11, 12, 5), 15),
			read(0, 12, 13, 15, 5),
		}},
		{"an unknown re-create continues above the tombstone", true, []*history.Op{
			reserveStep(0, 0, 1, 1, 10, 10),
			del(0, 2, 3),
			unknownOp(create(1, 4, 5, 3, 10)),
			read(0, 6, 7, 10, 10),
		}},
		{"an unknown re-create cannot reset max_id", false, []*history.Op{
			reserveStep(0, 0, 1, 1, 10, 10),
			del(0, 2, 3),
			unknownOp(create(1, 4, 5, 3, 10)),
			read(0, 6, 7, 3, 10),
		}},
		{"default step of a create with step 0", true, []*history.Op{
			del(0, 0, 1),
			create(0, 2, 3, 0, 0),
			reserveStep(0, 4, 5, 1, 1000, 1000),
		}},
		{"an unknown delete may take effect after its call", true, []*history.Op{
			read(0, 0, 1, 0, 10),
			unknownOp(del(1, 2, 3)),
			read(0, 4, 5, 0, 10),
			failed(read(0, 6, 7, 0, 0), history.CodeNotFound),
		}},
		{"an unknown delete cannot take effect before its call", false, []*history.Op{
			failed(read(0, 0, 1, 0, 0), history.CodeNotFound),
			unknownOp(del(1, 2, 3)),
		}},
		{"an unknown create may never take effect", true, []*history.Op{
			del(0, 0, 1),
			unknownOp(create(1, 2, 3, 50, 5)),
			failed(read(0, 4, 5, 0, 0), history.CodeNotFound),
		}},
		{"an unknown create takes effect once", false, []*history.Op{
			del(0, 0, 1),
			unknownOp(create(1, 2, 3, 50, 5)),
			read(0, 4, 5, 50, 5),
			del(0, 6, 7),
			read(0, 8, 9, 50, 5),
		}},
		{"a call that never left the client changes nothing", true, []*history.Op{
			func() *history.Op { op := unknownOp(del(1, 0, 1)); op.NotSent = true; return op }(),
			read(0, 2, 3, 0, 10),
		}},
		{"a call the store refused changes nothing", true, []*history.Op{
			func() *history.Op { op := unknownOp(del(1, 0, 1)); op.Refused = true; return op }(),
			read(0, 2, 3, 0, 10),
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for i, op := range tc.ops {
				op.ID = int64(i + 1)
			}
			r := Linearizable(tc.ops, "", 0)
			if r.OK != tc.ok || r.Undecided {
				t.Fatalf("got %+v, want ok=%v", r, tc.ok)
			}
		})
	}
}

// TestLinearizableManyUnknownWrites: tag writes of unknown outcome stay
// open to the end of the history, so porcupine must not try every subset
// of those that changed nothing. Hundreds of them, among a busy history,
// must be decided within seconds.
func TestLinearizableManyUnknownWrites(t *testing.T) {
	var ops []*history.Op
	now, maxID := int64(0), int64(0)
	for i := range 300 {
		switch i % 3 {
		case 0: // the tag exists: an already_exists, or never sent on
			ops = append(ops, unknownOp(create(1, now, now+1, int64(i+1)<<32, 10)))
		case 1: // step 0 changes nothing
			ops = append(ops, unknownOp(update(2, now, now+1, 0, 0, 0)))
		}
		ops = append(ops, reserveStep(0, now, now+1, maxID+1, maxID+10, 10), read(3, now+2, now+3, maxID+10, 10))
		maxID += 10
		now += 4
	}
	for i, op := range ops {
		op.ID = int64(i + 1)
	}
	if r := Linearizable(ops, "", 10*time.Second); !r.OK {
		t.Fatalf("valid history not accepted: %+v", r)
	}
	// The same with one stale read in the middle must still be rejected.
	stale := ops[len(ops)/2]
	for stale.Kind != history.GetTag {
		stale = ops[stale.ID] // the next one (IDs start at 1)
	}
	stale.MaxID -= 10
	if r := Linearizable(ops, "", 10*time.Second); r.OK || r.Undecided {
		t.Fatalf("stale read not found: %+v", r)
	}
}
