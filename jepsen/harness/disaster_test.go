package harness

import (
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/checker"
	"github.com/seqsvr/seqsvr/jepsen/history"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

// TestDisasterSmoke is the short disaster run of `make test`: backups
// under load, the whole store restored from the oldest one, a quorum
// lost and recovered; every checker must pass over the history of every
// cluster. 40 s: the restore alone takes the 10 s lease wait and one
// 8 s per-key lease before the quorum loss may begin.
func TestDisasterSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real-process fault run")
	}
	rep := runCfg(t, Disaster(40*time.Second))
	for _, f := range []string{nemesis.RestoreOldest, nemesis.QuorumLoss} {
		if rep.Faults[f] == 0 {
			t.Errorf("no %s in the run: %v", f, rep.Faults)
		}
	}
	if !rep.OK {
		t.Fatalf("checkers failed: %v", rep.Failed())
	}
}

// A write called before the destruction and answered after it by the
// restored cluster (its jumped range) takes part as one of unknown
// outcome, and such a read is left out; an answer wholly before the
// destruction is still checked.
func TestLinearizableFirstCrossingAnswers(t *testing.T) {
	const ms = int64(time.Millisecond)
	reserve := func(id int64, call, ret, first, last int64) *history.Op {
		return &history.Op{ID: id, Client: int(id), Kind: history.Reserve, Tag: "t", Size: last - first + 1, Call: call * ms, Return: ret * ms, OK: true, First: first, Last: last}
	}
	get := func(id int64, call, ret, max int64) *history.Op {
		return &history.Op{ID: id, Client: int(id), Kind: history.GetTag, Tag: "t", Call: call * ms, Return: ret * ms, OK: true, MaxID: max}
	}
	events := []nemesis.Event{
		{Fault: nemesis.QuorumLoss, Phase: "inject", At: 100 * time.Millisecond},
		{Fault: nemesis.QuorumLoss, Phase: "heal", At: 300 * time.Millisecond},
	}
	ops := []*history.Op{
		reserve(1, 0, 10, 1, 5),
		reserve(2, 20, 200, 1000001, 1000005), // answered by the recovered cluster
		get(3, 30, 150, 1000005),              // so was this read
		get(4, 40, 50, 5),
		reserve(5, 60, 70, 6, 10),
	}
	if r := checker.Linearizable(ops[:5], "", time.Minute); r.OK {
		t.Fatalf("the crossing answers taken as they are should not be linearizable: %s", r.Detail)
	}
	if r := linearizableFirst(ops, t.TempDir(), events); !r.OK {
		t.Fatalf("first cluster rejected: %s", r.Detail)
	}
	stale := append(ops, get(6, 80, 90, 3)) // wholly before: a stale read
	if r := linearizableFirst(stale, t.TempDir(), events); r.OK {
		t.Fatalf("a stale read before the destruction accepted: %s", r.Detail)
	}
}
