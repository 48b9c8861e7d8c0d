package harness

import (
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/storage/fsm"
)

// upgradeTimeline is three storesvrs started on the base at 0 and
// swapped to the new binary at 10 s, 20 s and 30 s, an allocsvr swapped
// at 40 s, and s2 rolled back at 60 s; samples are the cluster versions
// answered (at, version), every one by s1.
func upgradeTimeline(samples ...[2]int) *Timeline {
	tl := &Timeline{}
	start := func(at int, m string, store bool, bin string) {
		l := fsm.Level
		if bin == binaryBase {
			l = fsm.BaseLevel
		}
		tl.Binaries = append(tl.Binaries, BinaryStart{At: time.Duration(at) * time.Second, Member: m, Store: store, Binary: bin, Level: l})
	}
	for _, m := range []string{"s1", "s2", "s3"} {
		start(0, m, true, binaryBase)
	}
	start(0, "a1", false, binaryBase)
	start(10, "s1", true, binaryNew)
	start(20, "s2", true, binaryNew)
	start(30, "s3", true, binaryNew)
	start(40, "a1", false, binaryNew)
	start(60, "s2", true, binaryBase)
	for _, s := range samples {
		at := time.Duration(s[0]) * time.Second
		tl.Versions = append(tl.Versions, VersionSample{At: at, Ret: at + time.Millisecond, Member: "s1", ClusterVersion: uint32(s[1])})
	}
	return tl
}

func TestUpgradeTimeline(t *testing.T) {
	lv := int(fsm.Level)
	for _, c := range []struct {
		name string
		tl   *Timeline
		want string // in the problems; "" for none
	}{
		{"raise while a base member remains", upgradeTimeline([2]int{12, 1}, [2]int{25, lv}, [2]int{35, lv}),
			"while a storesvr still ran a binary below level"},
		{"raise seen just before the last swap", upgradeTimeline([2]int{12, 1}, [2]int{29, lv}), "s3 base (level 1)"},
		{"raise after all upgraded", upgradeTimeline([2]int{12, 1}, [2]int{29, 1}, [2]int{31, 1}, [2]int{33, lv}, [2]int{70, lv}), ""},
		{"base members answer no version", upgradeTimeline([2]int{5, 0}, [2]int{12, 1}, [2]int{33, lv}), ""},
		{"never raised", upgradeTimeline([2]int{12, 1}, [2]int{35, 1}, [2]int{55, 1}), "never raised to"},
		{"never polled", upgradeTimeline(), "never raised to"},
		{"never raised with the hold", func() *Timeline {
			tl := upgradeTimeline([2]int{12, 1}, [2]int{35, 1})
			tl.Hold = fsm.BaseLevel
			return tl
		}(), ""},
		{"a hold at the new level does not excuse", func() *Timeline {
			tl := upgradeTimeline([2]int{12, 1}, [2]int{35, 1})
			tl.Hold = fsm.Level
			return tl
		}(), "never raised to"},
		{"no storesvr on the new binary: nothing to raise", &Timeline{Binaries: []BinaryStart{{Member: "s1", Store: true, Binary: binaryBase, Level: fsm.BaseLevel}}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			bad, summary := c.tl.check()
			got := strings.Join(bad, "; ")
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Fatalf("problems %q, want %q (summary %s)", got, c.want, summary)
			}
		})
	}
}

// The verdict fails on the timeline's problems and shows its summary.
func TestUpgradeVerdictTiming(t *testing.T) {
	u := Upgrade{Base: "abc", Stores: 3, Allocs: 2, StoresDone: 3, AllocsDone: 2, LeaderKills: 1, ClusterVersion: "2 after 2s",
		Rollbacks: []Rollback{{Member: "a1", Result: "served"}, {Member: "s1", Result: "served"}}}
	u.Timeline = upgradeTimeline([2]int{12, 1}, [2]int{33, int(fsm.Level)})
	if r := u.Verdict(); !r.OK || !strings.Contains(r.Detail, "all storesvrs on level") {
		t.Fatalf("good timing: %+v", r)
	}
	u.Timeline = upgradeTimeline([2]int{12, int(fsm.Level)})
	if r := u.Verdict(); r.OK || !strings.Contains(r.Detail, "seen on s1") {
		t.Fatalf("early raise passed: %+v", r)
	}
}

func TestHoldArg(t *testing.T) {
	for _, c := range []struct {
		args []string
		want uint32
	}{
		{nil, 0},
		{[]string{"--data-dir", "x", "--cluster-version-hold", "1"}, 1},
		{[]string{"-cluster-version-hold=3"}, 3},
		{[]string{"--cluster-version-hold"}, 0},
	} {
		if got := holdArg(c.args); got != c.want {
			t.Errorf("%v: %d, want %d", c.args, got, c.want)
		}
	}
}
