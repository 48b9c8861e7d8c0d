package fsm

import (
	"errors"
	"math"
	"testing"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

func deleteCmd(tag string) *seqsvrv1.Command {
	return &seqsvrv1.Command{Cmd: &seqsvrv1.Command_DeleteTag{DeleteTag: &seqsvrv1.DeleteTagCommand{Tag: tag}}}
}

func tombstone(f *Machine, tag string) (int64, bool) {
	var v int64
	var ok bool
	f.read(func(st *fsmState) { v, ok = st.tombstones[tag] })
	return v, ok
}

// Guarantee 7 in the state machine: a deleted tag's max_id survives as a
// tombstone and a re-created tag continues above it, whatever its start.
func TestFSMTagLifecycle(t *testing.T) {
	cases := []struct {
		name    string
		before  []*seqsvrv1.Command // applied in order, each must succeed
		cmd     *seqsvrv1.Command
		wantErr error
		wantMax int64 // max_id of "t" afterwards; -1: absent
		wantTS  int64 // tombstone of "t" afterwards; -1: none
	}{
		{"delete leaves a tombstone", []*seqsvrv1.Command{createCmd("t", 0, 10), reserveCmd("t", 0, "", 0)},
			deleteCmd("t"), nil, -1, 10},
		{"re-create continues above the tombstone", []*seqsvrv1.Command{createCmd("t", 0, 10), reserveCmd("t", 0, "", 0), reserveCmd("t", 0, "", 0), deleteCmd("t")},
			createCmd("t", 0, 5), nil, 20, -1},
		{"re-create with a start above the tombstone keeps the start", []*seqsvrv1.Command{createCmd("t", 0, 10), reserveCmd("t", 0, "", 0), deleteCmd("t")},
			createCmd("t", 1000, 5), nil, 1000, -1},
		{"re-create with the tombstone's own max_id", []*seqsvrv1.Command{createCmd("t", 7, 10), deleteCmd("t")},
			createCmd("t", 7, 5), nil, 7, -1},
		{"a tombstone survives several lives", []*seqsvrv1.Command{createCmd("t", 0, 10), reserveCmd("t", 0, "", 0), deleteCmd("t"), createCmd("t", 0, 3), reserveCmd("t", 0, "", 0)},
			deleteCmd("t"), nil, -1, 13},
		{"delete of an absent tag is not_found and leaves no tombstone", nil,
			deleteCmd("t"), errs.NotFound, -1, -1},
		{"delete twice: the second is not_found, the tombstone stays", []*seqsvrv1.Command{createCmd("t", 4, 10), deleteCmd("t")},
			deleteCmd("t"), errs.NotFound, -1, 4},
		{"a tombstone does not make the name exist", []*seqsvrv1.Command{createCmd("t", 0, 10), deleteCmd("t")},
			reserveCmd("t", 0, "", 0), errs.NotFound, -1, 0},
		{"a tombstone does not block creation", []*seqsvrv1.Command{createCmd("t", 0, 10), deleteCmd("t")},
			createCmd("t", 0, 10), nil, 0, -1},
		{"other tags are unaffected", []*seqsvrv1.Command{createCmd("u", 50, 10), deleteCmd("u")},
			createCmd("t", 0, 10), nil, 0, -1},
		{"a re-created tag at the top is exhausted, not reset", []*seqsvrv1.Command{createCmd("t", math.MaxInt64-5, 5), reserveCmd("t", 0, "", 0), deleteCmd("t"), createCmd("t", 0, 5)},
			reserveCmd("t", 1, "", 0), errs.ResourceExhausted, math.MaxInt64, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := New(nil)
			for i, b := range c.before {
				if r := applyAt(t, f, int64(i+1), b); r.Err != nil {
					t.Fatalf("setup %d: %v", i, r.Err)
				}
			}
			r := applyAt(t, f, 100, c.cmd)
			if !errors.Is(r.Err, c.wantErr) || (c.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("err %v, want %v", r.Err, c.wantErr)
			}
			if got := maxID(f, "t"); got != c.wantMax {
				t.Errorf("max_id %d, want %d", got, c.wantMax)
			}
			ts, ok := tombstone(f, "t")
			if !ok {
				ts = -1
			}
			if ts != c.wantTS {
				t.Errorf("tombstone %d (present %v), want %d", ts, ok, c.wantTS)
			}
		})
	}
}

// The first segment of a re-created tag lies above every segment of its
// earlier life.
func TestFSMRecreatedTagSegmentsAbove(t *testing.T) {
	f := New(nil)
	mustApply(t, f, 1, createCmd("t", 0, 100))
	var last int64
	for i := 0; i < 3; i++ {
		last = mustApply(t, f, 2, reserveCmd("t", 0, "", 0)).Seg.GetLast()
	}
	mustApply(t, f, 3, deleteCmd("t"))
	created := mustApply(t, f, 4, createCmd("t", 0, 100))
	if created.Tag.GetMaxId() != last {
		t.Fatalf("re-created tag answered max_id %d, want %d", created.Tag.GetMaxId(), last)
	}
	if seg := mustApply(t, f, 5, reserveCmd("t", 0, "", 0)).Seg; seg.GetFirst() != last+1 {
		t.Fatalf("first segment of the new life %v, want it to begin at %d", seg, last+1)
	}
}
