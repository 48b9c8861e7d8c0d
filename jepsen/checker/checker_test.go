package checker

import (
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

func res(id int64, client int, call, ret, first, last int64) *history.Op {
	return &history.Op{ID: id, Client: client, Kind: history.Reserve, Tag: "t", Size: last - first + 1, Call: call, Return: ret, OK: true, First: first, Last: last}
}

func get(id int64, client int, call, ret, max int64) *history.Op {
	return &history.Op{ID: id, Client: client, Kind: history.GetTag, Tag: "t", Call: call, Return: ret, OK: true, MaxID: max}
}

func TestLinearizable(t *testing.T) {
	ok := []*history.Op{res(1, 0, 0, 10, 1, 5), res(2, 1, 5, 20, 6, 8), get(3, 0, 21, 22, 8)}
	if r := Linearizable(ok, "", 0); !r.OK {
		t.Fatalf("valid history rejected: %s", r.Detail)
	}
	stale := []*history.Op{res(1, 0, 0, 10, 1, 5), get(2, 1, 11, 12, 0)}
	dir := t.TempDir()
	r := Linearizable(stale, dir, 0)
	if r.OK || r.Artifact == "" {
		t.Fatalf("stale read accepted or no visualization: %+v", r)
	}
	dup := []*history.Op{res(1, 0, 0, 10, 1, 5), res(2, 1, 0, 10, 1, 5)}
	if r := Linearizable(dup, "", 0); r.OK {
		t.Fatal("duplicate segment accepted")
	}
	unknown := []*history.Op{res(1, 0, 0, 10, 1, 5), {Kind: history.Reserve, Tag: "t", Unresolved: true}}
	if r := Linearizable(unknown, "", 0); r.OK || !r.Undecided {
		t.Fatalf("unresolved operation accepted or not marked undecided: %+v", r)
	}
	if r := Linearizable(dup, "", 0); r.Undecided {
		t.Fatal("a found violation marked undecided")
	}
}

func ids(id int64, target string, life int, kind string, call, ret int64, v ...int64) *history.Op {
	return &history.Op{ID: id, Kind: kind, Target: target, Life: life, LifeReturn: life, Tag: "x", Call: call, Return: ret, OK: true, IDs: v}
}

func TestSegmentChecks(t *testing.T) {
	good := []*history.Op{ids(1, "a1", 1, history.NextIDs, 0, 1, 1, 2), ids(2, "a1", 1, history.NextIDs, 2, 3, 3), ids(3, "a2", 1, history.NextIDs, 0, 3, 101)}
	for _, r := range []Result{UniqueIDs(good, history.NextIDs), MonotonicPerLifetime(good, history.NextIDs), WithinReserved(good, map[string]int64{"x": 200})} {
		if !r.OK {
			t.Fatalf("%s rejected a valid history: %s", r.Name, r.Detail)
		}
	}
	dup := append(good, ids(4, "a2", 1, history.NextIDs, 4, 5, 3))
	if r := UniqueIDs(dup, history.NextIDs); r.OK {
		t.Fatal("duplicate accepted")
	}
	back := append(good, ids(4, "a1", 1, history.NextIDs, 4, 5, 2))
	if r := MonotonicPerLifetime(back, history.NextIDs); r.OK {
		t.Fatal("decreasing IDs accepted")
	}
	if r := WithinReserved(good, map[string]int64{"x": 100}); r.OK {
		t.Fatal("ID above max_id accepted")
	}
	final := map[string]map[string]int64{"s1": {"t": 8}, "s2": {"t": 7}}
	if r := FinalState([]*history.Op{res(1, 0, 0, 1, 1, 8)}, final, []string{"t"}); r.OK {
		t.Fatal("disagreeing members accepted")
	}
	if r := SegmentsDisjoint([]*history.Op{res(1, 0, 0, 1, 1, 8), res(2, 0, 0, 1, 8, 9)}); r.OK {
		t.Fatal("overlapping segments accepted")
	}
}

func TestSnowflakeChecks(t *testing.T) {
	l := Layout{WorkerBits: 10, SequenceBits: 12}
	mk := func(ts, w, seq int64) int64 { return ts<<22 | w<<12 | seq }
	good := []*history.Op{
		ids(1, "a1", 1, history.Snowflake, 0, 10, mk(100, 1, 0)),
		ids(2, "a1", 1, history.Snowflake, 20, 30, mk(101, 1, 0)),
		ids(3, "a1t", 1, history.Snowflake, 40, 50, mk(200, 1, 0)),
		ids(4, "a1t", 1, history.Snowflake, 60, 70, mk(201, 1, 0)),
	}
	if r := WorkerExclusive(good, l, 1000); !r.OK {
		t.Fatalf("sequential holders rejected: %s", r.Detail)
	}
	if r := WorkerTimeline(good, l); !r.OK {
		t.Fatalf("valid timeline rejected: %s", r.Detail)
	}
	overlap := append(good, ids(5, "a1", 1, history.Snowflake, 52, 58, mk(202, 1, 5)))
	if r := WorkerExclusive(overlap, l, 1000); r.OK {
		t.Fatal("two live holders accepted")
	}
	// A holder that stopped, let a twin (same name and start count, its
	// own pid) hold the worker and die, then served again: no overlap,
	// as long as its own responses are too far apart to prove it held
	// the worker throughout.
	twin := func(id int64, pid int, call, ret, ts int64) *history.Op {
		op := ids(id, "a1t", 1, history.Snowflake, call, ret, mk(ts, 1, 0))
		op.Pid = pid
		return op
	}
	handBack := []*history.Op{
		ids(1, "a1", 1, history.Snowflake, 0, 10, mk(100, 1, 0)),
		ids(2, "a1", 1, history.Snowflake, 20, 30, mk(101, 1, 0)),
		twin(3, 7, 1000, 1010, 200), twin(4, 7, 1020, 1030, 201),
		ids(5, "a1", 1, history.Snowflake, 3000, 3010, mk(300, 1, 0)),
		ids(6, "a1", 1, history.Snowflake, 3020, 3030, mk(301, 1, 0)),
		twin(7, 8, 5000, 5010, 400), twin(8, 8, 5020, 5030, 401),
	}
	if r := WorkerExclusive(handBack, l, 100); !r.OK {
		t.Fatalf("hand-over and back rejected: %s", r.Detail)
	}
	// With a gap bound that covers the hand-back, the same history proves
	// a1 held the worker while the first twin served.
	if r := WorkerExclusive(handBack, l, 4000); r.OK {
		t.Fatal("overlap within the gap bound accepted")
	}
	backwards := append(good, ids(5, "a1", 2, history.Snowflake, 80, 90, mk(150, 1, 0)))
	if r := WorkerTimeline(backwards, l); r.OK {
		t.Fatal("timestamp going back accepted")
	}
}

func TestProgress(t *testing.T) {
	all := []*history.Op{res(1, 0, 0, 1, 1, 2), get(2, 0, 2, 3, 2),
		ids(3, "a1", 1, history.NextIDs, 0, 1, 1), ids(4, "a1", 1, history.Snowflake, 0, 1, 5)}
	if r := Progress(all); !r.OK {
		t.Fatalf("busy history rejected: %s", r.Detail)
	}
	noSnow := append([]*history.Op{}, all[:3]...)
	noSnow = append(noSnow, &history.Op{Kind: history.Snowflake, Err: "unavailable"})
	if r := Progress(noSnow); r.OK {
		t.Fatal("a history without one successful snowflake call accepted")
	}
	noDelete := append(append([]*history.Op{}, all...), create(0, 5, 6, 100, 10), failed(del(0, 7, 8), "unavailable"))
	if r := Progress(noDelete); r.OK {
		t.Fatal("a history whose deletes all failed accepted")
	}
	if r := Progress(noDelete[:5]); !r.OK {
		t.Fatalf("a history with successful creates and no delete rejected: %s", r.Detail)
	}
	// A create answered already_exists counts for creates; one of
	// unknown outcome does not, nor does an answered read for a kind
	// outside the tag writes.
	answered := append(append([]*history.Op{}, all...), failed(create(0, 5, 6, 100, 10), history.CodeAlreadyExists))
	if r := Progress(answered); !r.OK {
		t.Fatalf("a history whose one create was answered already_exists rejected: %s", r.Detail)
	}
	unknown := append(append([]*history.Op{}, all...), failed(create(0, 5, 6, 100, 10), "unavailable"))
	if r := Progress(unknown); r.OK {
		t.Fatal("a history whose one create has an unknown outcome accepted")
	}
	noGet := []*history.Op{all[0], failed(get(2, 0, 2, 3, 2), history.CodeNotFound), all[2], all[3]}
	if r := Progress(noGet); r.OK {
		t.Fatal("a history whose one read was answered not_found accepted")
	}
}

func TestIdempotent(t *testing.T) {
	orig := &history.Op{ID: 1, Kind: history.Reserve, Tag: "t", RequestID: "r1", OK: true, First: 1, Last: 5, Return: 10}
	same := &history.Op{ID: 2, Kind: history.Resend, Tag: "t", RequestID: "r1", OK: true, First: 1, Last: 5, Return: 20, Across: "snapshot"}
	lost := &history.Op{ID: 3, Kind: history.Resend, Tag: "t", RequestID: "r1", Code: "unavailable", Return: 30}
	if r := Idempotent([]*history.Op{orig, same, lost}); !r.OK || r.Checked != 1 {
		t.Fatalf("same segment: %+v", r)
	}
	other := &history.Op{ID: 4, Kind: history.Resend, Tag: "t", RequestID: "r1", OK: true, First: 6, Last: 10, Return: 40, Across: "leader-change"}
	if r := Idempotent([]*history.Op{orig, same, other}); r.OK || r.Undecided || !strings.Contains(r.Detail, "leader-change") {
		t.Fatalf("another segment passed: %+v", r)
	}
	forgot := &history.Op{ID: 5, Kind: history.Resend, Tag: "t", RequestID: "r1", Code: history.CodeNotFound, Return: 40}
	if r := Idempotent([]*history.Op{orig, forgot}); r.OK {
		t.Fatalf("a forgotten request_id passed: %+v", r)
	}
	// The first call's outcome unknown, learned later: the resolved
	// answer and the re-send's must agree too.
	unknown := &history.Op{ID: 6, Kind: history.Reserve, Tag: "t", RequestID: "r2", OK: true, Resolved: true, First: 11, Last: 12, Return: 90}
	resend := &history.Op{ID: 7, Kind: history.Resend, Tag: "t", RequestID: "r2", OK: true, First: 13, Last: 14, Return: 50}
	if r := Idempotent([]*history.Op{unknown, resend}); r.OK {
		t.Fatalf("a resolved reservation disagreeing with its re-send passed: %+v", r)
	}
	if r := Idempotent([]*history.Op{orig, lost}); r.OK || !r.Undecided {
		t.Fatalf("re-sends never answered decided: %+v", r)
	}
}

func TestNoBurnedIDs(t *testing.T) {
	next := func(id int64, target string, life int, ids ...int64) *history.Op {
		return &history.Op{ID: id, Kind: history.NextIDs, Tag: SoloPrefix + target, Target: target, Life: life, LifeReturn: life, Pid: 100 + life,
			OK: true, IDs: ids, Count: len(ids)}
	}
	seg := SegmentBounds{Min: 10, Max: 20}
	// Consecutive within a life, a hole across lives: fine.
	ok := []*history.Op{next(1, "a1", 1, 1, 2, 3), next(2, "a1", 1, 4, 5), next(3, "a1", 2, 101, 102), next(4, "a2", 1, 7)}
	if r := NoBurnedIDs(ok, seg); !r.OK || r.Checked != 8 {
		t.Fatalf("consecutive: %+v", r)
	}
	// A hole of 3 inside a life with no call of unknown outcome: burned.
	holed := append(ok, next(5, "a1", 2, 106))
	if r := NoBurnedIDs(holed, seg); r.OK || !strings.Contains(r.Detail, "(102, 106)") {
		t.Fatalf("a hole passed: %+v", r)
	}
	// The allocsvr's own unavailable answer took nothing; a timeout may
	// have taken its count.
	own := &history.Op{ID: 6, Kind: history.NextIDs, Tag: SoloPrefix + "a1", Target: "a1", Life: 2, LifeReturn: 2, Pid: 102, Count: 5,
		Code: "unavailable", Err: `unavailable: tag "solo-a1": buffers empty`}
	if r := NoBurnedIDs(append(holed, own), seg); r.OK {
		t.Fatalf("an answered failure excused a hole: %+v", r)
	}
	timeout := &history.Op{ID: 7, Kind: history.NextIDs, Tag: SoloPrefix + "a1", Target: "a1", Life: 2, LifeReturn: 2, Pid: 102, Count: 3,
		Code: "deadline_exceeded", Err: "deadline_exceeded: context deadline exceeded"}
	if r := NoBurnedIDs(append(holed, timeout), seg); !r.OK {
		t.Fatalf("a timed-out call of 3 did not excuse a hole of 3: %+v", r)
	}
	// After a restart, one hole of a segment's size (a killed
	// predecessor's reservation the store committed late) is excused;
	// not in a first lifetime, not a hole smaller than a segment, not two.
	late := append(ok[:len(ok):len(ok)], next(9, "a1", 2, 103, 104), next(10, "a1", 2, 120))
	if r := NoBurnedIDs(late, seg); !r.OK {
		t.Fatalf("one segment-sized hole after a restart: %+v", r)
	}
	if r := NoBurnedIDs(append(late, next(11, "a1", 2, 135)), seg); r.OK {
		t.Fatalf("two segment-sized holes in one lifetime passed: %+v", r)
	}
	if r := NoBurnedIDs(append(ok[:len(ok):len(ok)], next(12, "a1", 1, 20)), seg); r.OK {
		t.Fatalf("a segment-sized hole in a first lifetime passed: %+v", r)
	}
	if r := NoBurnedIDs(append(ok[:len(ok):len(ok)], next(13, "a1", 2, 108)), seg); r.OK {
		t.Fatalf("a hole smaller than a segment after a restart passed: %+v", r)
	}
	// Other tags are not checked.
	other := &history.Op{ID: 8, Kind: history.NextIDs, Tag: "ids-0", Target: "a1", Life: 1, LifeReturn: 1, OK: true, IDs: []int64{1, 50}}
	if r := NoBurnedIDs([]*history.Op{other}, seg); !r.OK || r.Checked != 0 {
		t.Fatalf("an ordinary tag checked: %+v", r)
	}
}
