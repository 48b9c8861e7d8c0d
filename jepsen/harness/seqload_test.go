package harness

import (
	"math"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/checker"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

// TestSeqG9Events: the nemesis log read the way guarantee 9 speaks of it.
func TestSeqG9Events(t *testing.T) {
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	ev := func(at float64, fault, phase, target, detail string) nemesis.Event {
		return nemesis.Event{At: s(at), Fault: fault, Phase: phase, Target: target, Detail: detail}
	}
	ttl := 2 * time.Second
	scale, excused, down := seqG9Events([]nemesis.Event{
		ev(1, "seq-kill-alloc", "inject", "a1", "SIGKILL"),
		ev(4, "seq-kill-alloc", "heal", "a1", "restarted after 3s"),
		ev(5, "kill-leader", "inject", "s2", "SIGKILL"),
		ev(6, "kill-leader", "heal", "s2", "restarted"),
		ev(7, "seq-term-alloc", "inject", "a2", "SIGTERM"),
		ev(8, "seq-term-alloc", "heal", "a2", "restarted"),
		ev(9, "seq-add-alloc", "inject", "ax", "started"),
		ev(11, "seq-add-alloc", "heal", "ax", "SIGKILL after 2s"),
		ev(12, "twin-takeover", "inject", "a3", "SIGSTOP"),
		ev(13, "twin-takeover", "inject", "a3-twin", "twin serving"),
		// The cut heals while the twin serves: the fault goes on until
		// the twin is killed and the original restarted.
		ev(13.5, "twin-takeover", "heal", "a3", nemesis.TwinReconnected),
		ev(14, "twin-takeover", "heal", "a3", "twin killed"),
		ev(15, "pause-leader", "inject", "s1", "SIGSTOP"), // never healed
	}, ttl)
	want := []checker.SeqScale{
		{At: s(1), Bound: ttl + checker.SeqBlip}, {At: s(4), Bound: checker.SeqBlip},
		{At: s(7), Bound: checker.SeqBlip}, {At: s(8), Bound: checker.SeqBlip},
		{At: s(9), Bound: checker.SeqBlip}, {At: s(11), Bound: ttl + checker.SeqBlip},
	}
	if len(scale) != len(want) {
		t.Fatalf("scale events %+v, want %d", scale, len(want))
	}
	for i, w := range want {
		if scale[i].At != w.At || scale[i].Bound != w.Bound {
			t.Errorf("scale[%d] = %+v, want at %s bound %s", i, scale[i], w.At, w.Bound)
		}
	}
	end := time.Duration(math.MaxInt64)
	wantEx := []checker.Span{{From: s(5), To: s(6) + ttl + checker.SeqBlip}, {From: s(12), To: s(14) + ttl + checker.SeqBlip}, {From: s(13), To: s(14) + ttl + checker.SeqBlip}, {From: s(15), To: end}}
	if len(excused) != len(wantEx) {
		t.Fatalf("excused %v, want %v", excused, wantEx)
	}
	for i, w := range wantEx {
		if excused[i] != w {
			t.Errorf("excused[%d] = %v, want %v", i, excused[i], w)
		}
	}
	for target, span := range map[string]checker.Span{"a1": {From: s(1), To: s(4)}, "a2": {From: s(7), To: s(8)}, "ax": {From: s(11), To: end}, "a3-twin": {From: s(13), To: s(14) + ttl + checker.SeqBlip}} {
		if got := down[target]; len(got) != 1 || got[0] != span {
			t.Errorf("down[%s] = %v, want %v", target, got, span)
		}
	}
}

// TestSeqG9EventsAimedAdd: seq-add-alloc-aimed is read as seq-add-alloc
// (a start within the blip, a graceful stop within the blip, the extra
// allocsvr down after its heal), not as an unexplained fault excused for
// a lease TTL.
func TestSeqG9EventsAimedAdd(t *testing.T) {
	s := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
	scale, excused, down := seqG9Events([]nemesis.Event{
		{At: s(3), Fault: "seq-add-alloc-aimed", Phase: "inject", Target: "ax", Detail: "started"},
		{At: s(5), Fault: "seq-add-alloc-aimed", Phase: "heal", Target: "ax", Detail: "SIGTERM after 2s"},
	}, 2*time.Second)
	if len(scale) != 2 || scale[0].At != s(3) || scale[1].At != s(5) || scale[0].Bound != checker.SeqBlip || scale[1].Bound != checker.SeqBlip {
		t.Errorf("scale events %+v, want a start at 3s and a stop at 5s, each within %s", scale, checker.SeqBlip)
	}
	if len(excused) != 0 {
		t.Errorf("excused %v, want none", excused)
	}
	if got := down["ax"]; len(got) != 1 || got[0] != (checker.Span{From: s(5), To: time.Duration(math.MaxInt64)}) {
		t.Errorf("down[ax] = %v, want from 5s on", got)
	}
}
