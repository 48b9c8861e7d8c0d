package harness

import (
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
	for _, n := range names {
		st, err := raftconf.OpenStores(filepath.Join(dir, n+".db"))
		if err != nil {
			t.Fatal(err)
		}
		var logs []*raft.Log
		for i := uint64(1); i <= 5; i++ {
			l := &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}}
			if n == "s3" && i == 3 {
				l.Term, l.Data = 2, []byte("other")
			}
			if n == "s2" && i == 5 {
				l.Data = []byte("uncommitted")
			}
			logs = append(logs, l)
		}
		if err := st.Bolt.StoreLogs(logs); err != nil {
			t.Fatal(err)
		}
		st.Bolt.Close()
	}
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
