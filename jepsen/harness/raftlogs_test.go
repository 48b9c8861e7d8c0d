package harness

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/seqsvr/seqsvr/internal/raftconf"
	"github.com/seqsvr/seqsvr/jepsen/checker"
)

// TestCompareRaftLogs: three members' bolt files, the same but for one
// entry's term at index 3 on s3 (as hashicorp/raft#695 leaves them), and
// an entry past the applied index that is not compared.
func TestCompareRaftLogs(t *testing.T) {
	dir := t.TempDir()
	names := []string{"s1", "s2", "s3"}
	writeLogs(t, dir, names, 5, func(n string, l *raft.Log) bool {
		if n == "s3" && l.Index == 3 {
			l.Term, l.Data = 2, []byte("other")
		}
		if n == "s2" && l.Index == 5 {
			l.Data = []byte("uncommitted")
		}
		return true
	})
	got := compareRaftLogs(dir, names, 4)
	if got.Err != "" || got.From != 1 || got.To != 4 || got.Compared != 4 || got.Diffs != 1 || !strings.Contains(got.Diff, "index 3") || !strings.Contains(got.Diff, "s3: term 2") {
		t.Fatalf("compare: %+v", got)
	}
	if r := checker.RaftLogsAgree(got); r.OK {
		t.Fatalf("a differing entry passed: %+v", r)
	}
	// Up to index 2 every member holds the same entries.
	if r := checker.RaftLogsAgree(compareRaftLogs(dir, names, 2)); !r.OK || r.Checked != 2 {
		t.Fatalf("identical prefix: %+v", r)
	}
	if r := checker.RaftLogsAgree(compareRaftLogs(dir, []string{"s1", "missing"}, 4)); r.OK || !r.Undecided {
		t.Fatalf("a missing file: %+v", r)
	}
}

// TestCompareRaftLogsAfterSnapshotInstall: a member that installed a
// snapshot keeps the entries it had and appends after the snapshot (seen
// in the membership scenario: s3 held 22120..32359 and 45759.., nothing
// between). Its missing entries are counted, the others compared, and a
// difference after the hole is still found.
func TestCompareRaftLogsAfterSnapshotInstall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "raft-kept")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"s1", "s2", "s3"}
	writeLogs(t, dir, names, 10, func(n string, l *raft.Log) bool {
		if n == "s3" && l.Index == 9 {
			l.Data = []byte("other")
		}
		// s3 lacks 4..7: covered by the snapshot it installed.
		return n != "s3" || l.Index < 4 || l.Index > 7
	})
	got := compareRaftLogs(dir, names, 8)
	if got.Err != "" || got.Compared != 8 || got.Diffs != 0 || got.Missing["s3"] != 4 || len(got.Missing) != 1 {
		t.Fatalf("compare up to 8: %+v", got)
	}
	r := checker.RaftLogsAgree(got)
	if !r.OK || !strings.Contains(r.Detail, "s3 lacks 4") {
		t.Fatalf("a snapshot's hole failed the check: %+v", r)
	}
	got = compareRaftLogs(dir, names, 10)
	if got.Diffs != 1 || !strings.Contains(got.Diff, "index 9") {
		t.Fatalf("a difference after the hole: %+v", got)
	}

	// A re-check of the folder compares the kept logs again over the range
	// the run compared, replacing what the run saved (here the error the
	// comparison before this one gave).
	f := &Final{RaftLogs: &checker.RaftLogs{Members: names, From: 1, To: 8, Err: "s3: entry 4: log not found"}}
	if note := recompareRaftLogs(filepath.Dir(dir), f); note == "" {
		t.Fatal("kept logs not compared again")
	}
	if r := checker.RaftLogsAgree(f.RaftLogs); !r.OK || r.Checked != 8 {
		t.Fatalf("re-check: %+v", r)
	}
	if note := recompareRaftLogs(t.TempDir(), &Final{RaftLogs: &checker.RaftLogs{Members: names}}); note != "" {
		t.Fatalf("a folder without raft-kept: %q", note)
	}
}

// writeLogs writes entries 1..n (term 1, data the index) into NAME.db in
// dir for each name, as edit leaves them; edit returning false leaves the
// entry out.
func writeLogs(t *testing.T, dir string, names []string, n uint64, edit func(name string, l *raft.Log) bool) {
	t.Helper()
	for _, name := range names {
		st, err := raftconf.OpenStores(filepath.Join(dir, name+".db"))
		if err != nil {
			t.Fatal(err)
		}
		var logs []*raft.Log
		for i := uint64(1); i <= n; i++ {
			l := &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}}
			if edit(name, l) {
				logs = append(logs, l)
			}
		}
		if err := st.Bolt.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
		st.Bolt.Close()
	}
}
