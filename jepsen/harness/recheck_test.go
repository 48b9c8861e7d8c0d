package harness

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/checker"
	"github.com/seqsvr/seqsvr/jepsen/history"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

// sf builds a snowflake ID in the fixture's layout (10 worker bits, 12
// sequence bits, epoch 0).
func sf(ts, worker, seq int64) int64 { return ts<<22 | worker<<12 | seq }

func op(id int64, client int, kind, target string, pid int, call, ret int64) *history.Op {
	return &history.Op{ID: id, Client: client, Kind: kind, Target: target, Life: 1, LifeReturn: 1, Pid: pid, Call: call, Return: ret, OK: true}
}

func reserve(id int64, client int, call, ret, first, last int64) *history.Op {
	o := op(id, client, history.Reserve, "s1", 10, call, ret)
	o.Tag, o.Size, o.First, o.Last = "lin-0", last-first+1, first, last
	return o
}

func nextIDs(id int64, target string, pid int, call, ret int64, ids ...int64) *history.Op {
	o := op(id, 4, history.NextIDs, target, pid, call, ret)
	o.Tag, o.Count, o.IDs = "ids-0", len(ids), ids
	return o
}

func snowflake(id int64, target string, pid int, call, ret int64, ids ...int64) *history.Op {
	o := op(id, 5, history.Snowflake, target, pid, call, ret)
	o.Count, o.IDs = len(ids), ids
	return o
}

func seqCall(id int64, kind, target string, call, ret int64, keys []uint64, seqs ...int64) *history.Op {
	o := op(id, 6, kind, target, 100, call, ret)
	o.Space, o.Keys, o.Seqs = "seq", keys, seqs
	return o
}

// validInputs is a small history every checker passes, with one resolved
// and one never-sent reservation, and its final state.
func validInputs() Inputs {
	get := op(3, 0, history.GetTag, "s2", 11, 21, 22)
	get.Tag, get.MaxID = "lin-0", 8
	notSent := op(4, 2, history.Reserve, "s3", 12, 23, 24)
	notSent.Tag, notSent.Size, notSent.OK, notSent.NotSent, notSent.Err = "lin-0", 1, false, true, "dial tcp: refused"
	resolved := reserve(5, 1, 30, 40, 9, 10)
	resolved.Resolved, resolved.Err = true, "deadline_exceeded"
	failedNext := op(12, 4, history.NextIDs, "a2", 200, 40, 41)
	failedNext.Tag, failedNext.OK, failedNext.Code = "ids-0", false, "unavailable"
	// Only reservations count as not sent: nothing else is re-issued.
	notSentSnow := op(13, 5, history.Snowflake, "a1", 100, 42, 43)
	notSentSnow.OK, notSentSnow.NotSent = false, true
	ops := []*history.Op{
		reserve(1, 0, 0, 10, 1, 5),
		reserve(2, 1, 5, 20, 6, 8),
		get, notSent, resolved,
		nextIDs(6, "a1", 100, 0, 5, 1, 2, 3),
		nextIDs(7, "a1", 100, 6, 7, 4),
		nextIDs(8, "a2", 200, 0, 5, 101, 102),
		snowflake(9, "a1", 100, 0, 5, sf(100, 1, 0), sf(100, 1, 1)),
		snowflake(10, "a1", 100, 10, 15, sf(101, 1, 0)),
		snowflake(11, "a2", 200, 0, 5, sf(100, 2, 0)),
		failedNext, notSentSnow,
		seqCall(14, history.SeqNext, "a1", 0, 5, []uint64{3}, 1),
		seqCall(15, history.SeqNexts, "a2", 6, 7, []uint64{3, 3, 700}, 2, 3, 1),
		seqCall(16, history.SeqCurrent, "a1", 8, 9, []uint64{3, 700}, 3, 1),
	}
	final := map[string]map[string]int64{}
	for _, m := range []string{"s1", "s2", "s3"} {
		final[m] = map[string]int64{"lin-0": 10, "ids-0": 200}
	}
	return Inputs{Ops: ops, Final: &Final{
		Tags: []string{"lin-0", "ids-0"}, MaxID: final,
		Snowflake: Layout{WorkerBits: 10, SequenceBits: 12, From: "a1"}, LeaseTTL: 3 * time.Second, SeqLeaseTTL: 2 * time.Second,
		RaftLogs: &checker.RaftLogs{Members: []string{"s1", "s2", "s3"}, From: 1, To: 40, Compared: 40},
	}}
}

// saved writes in to a fresh scenario folder the way Run does.
func saved(t *testing.T, in Inputs) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "mixed")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := SaveInputs(dir, in); err != nil {
		t.Fatal(err)
	}
	return dir
}

func recheck(t *testing.T, dir string) *Report {
	t.Helper()
	rep, err := Recheck(dir)
	if err != nil {
		t.Fatalf("recheck %s: %v", dir, err)
	}
	t.Logf("\n%s", rep.Table())
	return rep
}

// allCheckers is the full table: a re-check of a complete folder runs
// every one of them.
var allCheckers = []string{
	checker.ProgressName, checker.Linearizability, checker.SegmentsDisjointName, checker.FinalMaxID,
	checker.RaftLogsName, checker.SegmentUnique, checker.SegmentMonotonic, checker.SegmentWithinReserved,
	checker.SnowflakeUnique, checker.SnowflakeMonotonic, checker.SnowflakeTimeline, checker.SnowflakeExclusive,
	checker.SnowflakeDecoded, checker.SeqOrderName, checker.SeqUniqueName, checker.IdempotentName, checker.SegmentNoBurned,
	checker.ListingsName, checker.SpaceReadsName, checker.LeafMethodsName, checker.MarginRefusalsName, checker.SeqAvailabilityName,
}

func names(vs []Verdict) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Name)
	}
	return out
}

// TestRecheckPasses: a valid saved history passes every checker, none
// skipped, and the counts are those of the history.
func TestRecheckPasses(t *testing.T) {
	rep := recheck(t, saved(t, validInputs()))
	if !rep.OK || len(rep.Failed()) > 0 || rep.Skipped() > 0 {
		t.Fatalf("valid history: ok=%v failed=%v skipped=%d", rep.OK, rep.Failed(), rep.Skipped())
	}
	if got := names(rep.Results); !slices.Equal(got, allCheckers) {
		t.Fatalf("checkers run: %q, want %q", got, allCheckers)
	}
	if want := (SpaceFigures{Calls: 3, OK: 3, Keys: 2, Taken: 4, MaxSeq: 3}); rep.Spaces["seq"] != want {
		t.Fatalf("space figures %+v, want %+v", rep.Spaces["seq"], want)
	}
	if rep.Ops != 16 || rep.Resolved != 1 || rep.NotSent != 1 || rep.Unresolved != 0 || rep.OpsByKind[history.NextIDs] != [2]int{4, 3} {
		t.Fatalf("counts: ops %d resolved %d not sent %d unresolved %d next %v", rep.Ops, rep.Resolved, rep.NotSent, rep.Unresolved, rep.OpsByKind[history.NextIDs])
	}
}

// TestRecheckFinds: a saved history with a violation fails, through the
// checkers that watch for it and no others.
func TestRecheckFinds(t *testing.T) {
	for _, tc := range []struct {
		name string
		bad  *history.Op
		want []string
	}{
		// Another allocsvr hands out an ID a1 already did.
		{"duplicate segment ID", nextIDs(20, "a3", 300, 8, 9, 4), []string{checker.SegmentUnique}},
		// An acknowledged segment inside one acknowledged earlier; a
		// fetch-and-add register cannot return it either.
		{"overlapping segments", reserve(20, 3, 50, 60, 7, 8), []string{checker.Linearizability, checker.SegmentsDisjointName}},
		// A reservation whose outcome stayed unknown leaves porcupine
		// undecided, which fails the run as a violation would.
		// A NextSeq begun after key 3 was answered 3 answers 2 again.
		{"per-key value going back", seqCall(20, history.SeqNext, "a2", 10, 11, []uint64{3}, 2), []string{checker.SeqOrderName, checker.SeqUniqueName}},
		{"unresolved reservation", &history.Op{ID: 20, Client: 3, Kind: history.Reserve, Target: "s1", Tag: "lin-0", Size: 1, Call: 50, Return: 60, Unresolved: true},
			[]string{checker.Linearizability}},
		// A HEAD of a Leaf route answered like a GET (the history's only
		// one, so no HEAD/POST was refused right either: Progress).
		{"Leaf HEAD answered 200", &history.Op{ID: 20, Client: 2, Kind: history.LeafMethod, Target: "a1", Path: history.PathLeafH2, URL: "/api/segment/get/ids-0",
			Method: "HEAD", Call: 50, Return: 60, HTTPStatus: 200}, []string{checker.ProgressName, checker.LeafMethodsName}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := validInputs()
			in.Ops = append(in.Ops, tc.bad)
			rep := recheck(t, saved(t, in))
			if rep.OK || !slices.Equal(rep.Failed(), tc.want) {
				t.Fatalf("ok=%v failed=%q, want failed %q", rep.OK, rep.Failed(), tc.want)
			}
		})
	}
}

// TestRecheckOlderFolder: a folder saved before final.json existed still
// passes on what it has, with the checkers that need final.json reported
// skipped (and not passed); a violation in it still fails.
func TestRecheckOlderFolder(t *testing.T) {
	in := validInputs()
	in.Final = nil
	rep := recheck(t, saved(t, in))
	if !rep.OK || len(rep.Failed()) > 0 {
		t.Fatalf("older folder: ok=%v failed=%q", rep.OK, rep.Failed())
	}
	wantSkipped := []string{checker.FinalMaxID, checker.RaftLogsName, checker.SegmentWithinReserved, checker.SnowflakeTimeline, checker.SnowflakeExclusive,
		checker.SnowflakeDecoded, checker.SeqAvailabilityName}
	var skippedNames []string
	for _, v := range rep.Results {
		if v.Skipped != "" {
			skippedNames = append(skippedNames, v.Name)
			if v.OK || !v.Undecided {
				t.Errorf("%s skipped but ok=%v undecided=%v", v.Name, v.OK, v.Undecided)
			}
		}
	}
	if !slices.Equal(skippedNames, wantSkipped) || !slices.Equal(names(rep.Results), allCheckers) {
		t.Fatalf("skipped %q of %q, want %q skipped", skippedNames, names(rep.Results), wantSkipped)
	}

	in.Ops = append(in.Ops, nextIDs(20, "a3", 300, 8, 9, 4))
	if rep := recheck(t, saved(t, in)); rep.OK || !slices.Equal(rep.Failed(), []string{checker.SegmentUnique}) {
		t.Fatalf("older folder with a duplicate: ok=%v failed=%q", rep.OK, rep.Failed())
	}
}

// TestSavedRoundTrip: what a run saves (inputs, nemesis log, summary)
// loads back equal.
func TestSavedRoundTrip(t *testing.T) {
	in := validInputs()
	in.Final.MaxID["s3"] = map[string]int64{} // a member that answered nothing
	in.Final.Snowflake.EpochMs = 1704067200000
	dir := saved(t, in)
	got, err := LoadInputs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("inputs changed in the round trip:\n got %+v\nwant %+v", got, in)
	}

	nlog := nemesis.NewLog(time.Now(), nil)
	nlog.Inject("kill-leader", "s1", "SIGKILL")
	nlog.Heal("kill-leader", "s1", "restarted")
	nlog.Inject("kill-leader", "s2", "SIGKILL")
	nlog.Skip("pause-leader", "no leader")
	nlog.Inject("clock-jump-alloc", "a1", "+5s")
	if err := saveNemesis(dir, nlog); err != nil {
		t.Fatal(err)
	}
	faults, total, _, err := loadEvents(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantFaults, wantTotal := nlog.Counts()
	if !reflect.DeepEqual(faults, wantFaults) || total != wantTotal {
		t.Fatalf("faults %v (%d), want %v (%d)", faults, total, wantFaults, wantTotal)
	}

	live := &Report{Name: "mixed", Seed: 929279, OutDir: dir, Bugs: []string{"stale-reads"}, Notes: []string{"partitions: network namespaces + blackhole routes"}}
	live.check(in)
	live.Faults, live.FaultTotal = wantFaults, wantTotal
	if err := live.write(); err != nil {
		t.Fatal(err)
	}
	again := recheck(t, dir)
	if again.Name != live.Name || again.Seed != live.Seed || !slices.Equal(again.Bugs, live.Bugs) ||
		!reflect.DeepEqual(again.Faults, live.Faults) || again.FaultTotal != live.FaultTotal ||
		!reflect.DeepEqual(again.Results, live.Results) || again.Ops != live.Ops || !reflect.DeepEqual(again.OpsByKind, live.OpsByKind) {
		t.Fatalf("re-check of a saved run differs:\n%s\nlive:\n%s", again.Table(), live.Table())
	}
	if !slices.Contains(again.Notes, live.Notes[0]) {
		t.Fatalf("notes %q lost %q", again.Notes, live.Notes[0])
	}
}

// TestRecheckNotesChangedVerdict: a saved summary that disagrees with the
// re-check is pointed out.
func TestRecheckNotesChangedVerdict(t *testing.T) {
	in := validInputs()
	dir := saved(t, in)
	live := &Report{Name: "mixed", OutDir: dir}
	live.check(in)
	i := slices.IndexFunc(live.Results, func(v Verdict) bool { return v.Name == checker.SegmentUnique })
	live.Results[i].OK = false // the saved summary claims the segment IDs failed
	if err := live.write(); err != nil {
		t.Fatal(err)
	}
	rep := recheck(t, dir)
	want := checker.SegmentUnique + ": the saved summary says FAIL, the re-check pass"
	if !slices.Contains(rep.Notes, want) {
		t.Fatalf("notes %q lack %q", rep.Notes, want)
	}
}

// TestLoadInputsRejectsIncompleteFinal: a final.json without a layout
// would decode every snowflake ID as worker 0; it is an error, not a pass.
func TestLoadInputsRejectsIncompleteFinal(t *testing.T) {
	dir := saved(t, validInputs())
	if err := os.WriteFile(filepath.Join(dir, finalFile), []byte(`{"tags":["lin-0"],"max_id":{"s1":{"lin-0":10}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadInputs(dir); err == nil {
		t.Fatal("final.json without layout and lease TTL accepted")
	}
}

// TestScenarioDirs: a scenario folder is itself; a run folder yields its
// scenario folders and not the rest (bin/).
func TestScenarioDirs(t *testing.T) {
	run := t.TempDir()
	for _, d := range []string{"mixed", "kills", "bin"} {
		if err := os.Mkdir(filepath.Join(run, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"mixed", "kills"} {
		if err := SaveInputs(filepath.Join(run, d), validInputs()); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ScenarioDirs(run)
	want := []string{filepath.Join(run, "kills"), filepath.Join(run, "mixed")}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("run folder: %q, %v; want %q", got, err, want)
	}
	if got, err := ScenarioDirs(want[1]); err != nil || !slices.Equal(got, want[1:]) {
		t.Fatalf("scenario folder: %q, %v", got, err)
	}
	if _, err := ScenarioDirs(filepath.Join(run, "bin")); err == nil {
		t.Fatal("a folder without histories accepted")
	}
}

// TestRecheckKeepsSavedFailure: a checker that failed in the run and
// cannot run again offline (no final.json) keeps its failure; the
// re-check never turns a failed run into a pass.
func TestRecheckKeepsSavedFailure(t *testing.T) {
	in := validInputs()
	dir := saved(t, in)
	live := &Report{Name: "mixed", OutDir: dir}
	live.check(in)
	for i, v := range live.Results {
		if v.Name == checker.FinalMaxID {
			live.Results[i].OK = false
			live.Results[i].Detail = "lin-0: s1=10 s2=9"
		}
	}
	if err := live.write(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, finalFile)); err != nil {
		t.Fatal(err)
	}
	rep := recheck(t, dir)
	if rep.OK || !slices.Equal(rep.Failed(), []string{checker.FinalMaxID}) {
		t.Fatalf("ok=%v failed=%q; want the saved failure of %q to stand", rep.OK, rep.Failed(), checker.FinalMaxID)
	}
}
