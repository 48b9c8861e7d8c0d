package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/checker"
	"github.com/seqsvr/seqsvr/jepsen/harness"
	"github.com/seqsvr/seqsvr/jepsen/history"
)

// scenario saves, through the harness's own writer, a history every
// checker passes, plus extra operations, as run/name.
func scenario(t *testing.T, run, name string, extra ...*history.Op) {
	t.Helper()
	ok := func(id int64, kind, target string, call, ret int64) *history.Op {
		return &history.Op{ID: id, Kind: kind, Target: target, Life: 1, LifeReturn: 1, Pid: 1, Call: call, Return: ret, OK: true}
	}
	res := ok(1, history.Reserve, "s1", 0, 1)
	res.Tag, res.Size, res.First, res.Last = "lin-0", 2, 1, 2
	get := ok(2, history.GetTag, "s1", 2, 3)
	get.Tag, get.MaxID = "lin-0", 2
	next := ok(3, history.NextIDs, "a1", 0, 1)
	next.Tag, next.IDs = "ids-0", []int64{1, 2}
	snow := ok(4, history.Snowflake, "a1", 0, 1)
	snow.IDs = []int64{100<<22 | 1<<12}
	in := harness.Inputs{
		Ops: append([]*history.Op{res, get, next, snow}, extra...),
		Final: &harness.Final{
			Tags:        []string{"lin-0", "ids-0"},
			MaxID:       map[string]map[string]int64{"s1": {"lin-0": 2, "ids-0": 50}, "s2": {"lin-0": 2, "ids-0": 50}},
			Snowflake:   harness.Layout{WorkerBits: 10, SequenceBits: 12},
			LeaseTTL:    3 * time.Second,
			RaftLogs:    &checker.RaftLogs{Members: []string{"s1", "s2"}, From: 1, To: 9, Compared: 9},
			SeqLeaseTTL: 2 * time.Second,
		},
	}
	dir := filepath.Join(run, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := harness.SaveInputs(dir, in); err != nil {
		t.Fatal(err)
	}
}

// TestRecheck: -check on a run folder checks each scenario in it and
// exits 0 only if all pass; otherwise 1, naming the failing checker.
func TestRecheck(t *testing.T) {
	run := t.TempDir()
	scenario(t, run, "kills")
	scenario(t, run, "mixed")
	var out strings.Builder
	if code := recheck(&out, run); code != 0 {
		t.Fatalf("passing run folder: exit %d\n%s", code, out.String())
	}
	if s := out.String(); strings.Count(s, "PASS") != 4 || !strings.Contains(s, "kills ") || !strings.Contains(s, "mixed ") {
		t.Fatalf("want two tables and two summary lines, all PASS:\n%s", s)
	}

	dup := &history.Op{ID: 9, Kind: history.NextIDs, Target: "a2", Life: 1, LifeReturn: 1, Pid: 2, Tag: "ids-0", Call: 5, Return: 6, OK: true, IDs: []int64{2}}
	scenario(t, run, "mixed", dup)
	out.Reset()
	if code := recheck(&out, run); code != 1 {
		t.Fatalf("run folder with a duplicate ID: exit %d\n%s", code, out.String())
	}
	if want := fmt.Sprintf("%-18s ops %7d  faults %5d  FAIL: ", "mixed", 5, 0) + checker.SegmentUnique + "\n"; !strings.Contains(out.String(), want) {
		t.Fatalf("summary lacks %q:\n%s", want, out.String())
	}
	out.Reset()
	if code := recheck(&out, filepath.Join(run, "kills")); code != 0 {
		t.Fatalf("passing scenario folder: exit %d\n%s", code, out.String())
	}
}

// TestRecheckNoHistory: a folder with nothing to check is an error, not
// a pass.
func TestRecheckNoHistory(t *testing.T) {
	var out strings.Builder
	if code := recheck(&out, t.TempDir()); code != 2 {
		t.Fatalf("empty folder: exit %d\n%s", code, out.String())
	}
}
