package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/history"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

func TestFaultFigures(t *testing.T) {
	s := time.Second
	evs := []nemesis.Event{
		{Fault: "kill-leader", Phase: "inject", At: 1 * s},
		{Fault: "kill-leader", Phase: "heal", At: 2 * s},
		{Fault: "kill-leader", Phase: nemesis.PhaseWindow, At: 1 * s, End: 2 * s},
		{Fault: "kill-leader", Phase: "inject", At: 5 * s},
		{Fault: "kill-leader", Phase: nemesis.PhaseWindow, At: 5 * s, End: 6 * s},
		{Fault: "pause-alloc", Phase: "inject", At: 10 * s},
		{Fault: "pause-alloc", Phase: nemesis.PhaseWindow, At: 10 * s, End: 11 * s},
		{Fault: "operator", Phase: "skip", At: 3 * s},
	}
	ops := []*history.Op{
		{Call: int64(500 * time.Millisecond), Return: int64(1500 * time.Millisecond), OK: true}, // overlaps the first window
		{Call: int64(3 * s), Return: int64(4 * s), OK: true},                                    // between windows
		{Call: int64(1500 * time.Millisecond), Return: int64(5500 * time.Millisecond)},          // overlaps both: counted once
	}
	got := faultFigures(evs, ops)
	if f := got["kill-leader"]; f.Injected != 2 || f.Windows != 2 || f.Span != 2*s || f.Ops != 2 || f.OKOps != 1 {
		t.Fatalf("kill-leader = %+v", f)
	}
	if f := got["pause-alloc"]; f.Injected != 1 || f.Ops != 0 {
		t.Fatalf("pause-alloc = %+v", f)
	}
	if _, ok := got["operator"]; ok {
		t.Fatal("a skipped fault has a line")
	}
	lines := faultLines(got)
	if !strings.Contains(lines, "pause-alloc") || !strings.Contains(lines, "no operation ran within it") ||
		strings.Count(lines, "no operation") != 1 {
		t.Fatalf("lines:\n%s", lines)
	}
}
