package checker

import (
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// A restore jumps max_id: linearizable only when the history is split
// at it, and only the answers after it may take the jumped value.
func TestLinearizableAcrossRestore(t *testing.T) {
	h := []*history.Op{res(1, 0, 0, 10, 1, 5), res(2, 0, 100, 110, 200000006, 200000010), get(3, 0, 120, 130, 200000010)}
	if r := Linearizable(h, "", 0); r.OK {
		t.Fatalf("a jump passed without a restore: %+v", r)
	}
	lost := []Span{{From: 20, To: 90}}
	if r := LinearizableAcross(h, "", 0, lost); !r.OK {
		t.Fatalf("a jump across a restore rejected: %s", r.Detail)
	}
	// After the restore the history is checked as usual: a stale read
	// of the restored cluster fails.
	stale := append(h, get(4, 0, 140, 150, 5))
	if r := LinearizableAcross(stale, "", 0, lost); r.OK {
		t.Fatalf("a read below the restored max_id passed: %+v", r)
	}
	// A restore spans its own time only: the jump before it fails.
	early := []*history.Op{res(1, 0, 0, 10, 1, 5), res(2, 0, 12, 18, 200000006, 200000010)}
	if r := LinearizableAcross(early, "", 0, lost); r.OK {
		t.Fatalf("a jump before the restore passed: %+v", r)
	}
}

func TestNoBurnedIDsExcusesJumps(t *testing.T) {
	next := func(id int64, ids ...int64) *history.Op {
		return &history.Op{ID: id, Kind: history.NextIDs, Tag: SoloPrefix + "a1", Target: "a1", Life: 1, LifeReturn: 1, Pid: 101, OK: true, IDs: ids, Count: len(ids)}
	}
	ops := []*history.Op{next(1, 1, 2, 3), next(2, 200000004, 200000005)}
	seg := SegmentBounds{Min: 10, Max: 20, JumpMin: 100000000}
	if r := NoBurnedIDs(ops, seg); r.OK {
		t.Fatalf("a jump without a restore passed: %+v", r)
	}
	seg.Jumps = 1
	if r := NoBurnedIDs(ops, seg); !r.OK {
		t.Fatalf("one jump for one restore: %+v", r)
	}
	two := append(ops, next(3, 400000006))
	if r := NoBurnedIDs(two, seg); r.OK {
		t.Fatalf("two jumps for one restore passed: %+v", r)
	}
	// A burn beside the jump is still a burn.
	burned := append(ops, next(4, 200000009))
	if r := NoBurnedIDs(burned, seg); r.OK || !strings.Contains(r.Detail, "skipped") {
		t.Fatalf("a burn after a jump passed: %+v", r)
	}
}
