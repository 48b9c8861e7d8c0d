package harness

import (
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/checker"
	"github.com/seqsvr/seqsvr/jepsen/history"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

// The reads' real-time checks stop at the first restore: a routing
// version below an earlier one fails within one cluster's life and passes
// when a restore (which rolls the store back to a backup) came between.
func TestReadsFirstCluster(t *testing.T) {
	rt := func(id int64, call, ret time.Duration, v uint64) *history.Op {
		return &history.Op{ID: id, Kind: history.GetRouting, Target: "s1", Space: "seq", Call: int64(call), Return: int64(ret), OK: true,
			Routing: &history.Routing{Version: v, KeyCount: 100, SectionSize: 100, Runs: []history.RoutedRun{{First: 0, Last: 0}}}}
	}
	ops := []*history.Op{rt(1, 1*time.Second, 2*time.Second, 9), rt(2, 10*time.Second, 11*time.Second, 3)}
	if r := firstCluster(ops, nil, checker.SpaceReads); r.OK {
		t.Fatalf("a version going back without a restore accepted: %s", r.Detail)
	}
	restore := []nemesis.Event{{Fault: nemesis.RestoreOldest, Phase: "inject", At: 5 * time.Second}, {Fault: nemesis.RestoreOldest, Phase: "heal", At: 8 * time.Second}}
	if r := firstCluster(ops, restore, checker.SpaceReads); !r.OK || r.Checked != 1 {
		t.Fatalf("a version going back across a restore: ok=%v checked %d: %s", r.OK, r.Checked, r.Detail)
	}
	// Called before the restore, answered after it began: the restored
	// cluster may have answered it.
	ops = append(ops, rt(3, 4*time.Second, 6*time.Second, 1))
	if r := firstCluster(ops, restore, checker.SpaceReads); !r.OK {
		t.Fatalf("a read answered during the restore judged: %s", r.Detail)
	}
}
