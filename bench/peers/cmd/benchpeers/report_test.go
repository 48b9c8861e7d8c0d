package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/seqsvr/seqsvr/bench/loadgen/result"
)

func TestRatio(t *testing.T) {
	for _, c := range []struct {
		a, b float64
		want string
	}{{300, 100, "3.00×"}, {50, 200, "0.25×"}, {1, 0, "n/a"}, {1, -1, "n/a"}} {
		if got := ratio(c.a, c.b); got != c.want {
			t.Errorf("ratio(%v, %v) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}

func hist(vals ...int64) *hdrhistogram.Snapshot {
	h := hdrhistogram.New(1, 60_000_000, 3)
	for _, v := range vals {
		_ = h.RecordValue(v)
	}
	return h.Export()
}

// merge must add calls and measured time, not average the rates, and take
// percentiles from the added histograms.
func TestMergeRounds(t *testing.T) {
	m := merge([]Result{
		{Ops: 100, IDs: 100, Seconds: 1, Attempts: 110, MaxGapUs: 5, Hist: hist(10, 10, 10)},
		{Ops: 300, IDs: 300, Seconds: 3, Attempts: 300, MaxGapUs: 9, FirstError: "boom", Hist: hist(1000)},
	})
	if m.Ops != 400 || m.Seconds != 4 || m.OpsPerSec != 100 || m.IDsPerSec != 100 || m.Attempts != 410 {
		t.Fatalf("merged %+v: want 400 ops over 4 s = 100/s, 410 attempts", m)
	}
	if m.MaxGapUs != 9 || m.FirstError != "boom" {
		t.Fatalf("max gap %d, first error %q: want 9, boom", m.MaxGapUs, m.FirstError)
	}
	if m.P50us != 10 || m.MaxUs < 1000 || m.MaxUs > 1001 {
		t.Fatalf("p50 %d, max %d: want 10 and 1000 (from the merged histograms)", m.P50us, m.MaxUs)
	}
}

func TestStallAndMedian(t *testing.T) {
	run := func(gaps ...result.Gap) failoverRun {
		return failoverRun{killAt: time.Second, res: result.Result{Gaps: gaps}}
	}
	// A gap long before the kill does not count; one that began just
	// after it (calls in flight still succeeded) does, measured from the kill.
	f := run(result.Gap{StartUs: 100_000, Us: 50_000}, result.Gap{StartUs: 1_050_000, Us: 450_000})
	if got := f.stallUs(); got != 500_000 {
		t.Fatalf("stall %d µs, want 500000", got)
	}
	// A gap beginning more than 300 ms after the kill is not its stall.
	if got := run(result.Gap{StartUs: 1_400_000, Us: 100_000}).stallUs(); got != 0 {
		t.Fatalf("stall %d µs, want 0", got)
	}
	g := failoverGroup{runs: []failoverRun{
		run(result.Gap{StartUs: 1_000_000, Us: 300_000}),
		{failed: "kill: no leader"},
		run(result.Gap{StartUs: 1_000_000, Us: 100_000}),
		run(result.Gap{StartUs: 1_000_000, Us: 200_000}),
	}}
	m, ok := g.median()
	if !ok || m.stallUs() != 200_000 {
		t.Fatalf("median stall %d (ok %v), want 200000 (the failed run left out)", m.stallUs(), ok)
	}
	g.runs = append(g.runs, run(result.Gap{StartUs: 1_000_000, Us: 400_000}))
	if m, _ := g.median(); m.stallUs() != 300_000 {
		t.Fatalf("median of four stalls %d, want the upper middle 300000", m.stallUs())
	}
	if _, ok := (failoverGroup{runs: []failoverRun{{failed: "x"}}}).median(); ok {
		t.Fatal("median of only failed runs reported ok")
	}
}

// smokeCheck must fail a target that made no successful call, and pass
// the same run once every target has one.
func TestSmokeCheckTargets(t *testing.T) {
	dir := t.TempDir()
	rep := &report{cfg: config{clients: []int{1, 16}}}
	ok := Result{Ops: 5, Seconds: 1}
	rep.durable = []*series{{t: target{key: "seqsvr-go", label: "store"}, res: map[int]Result{1: ok, 16: ok}}}
	rep.ids = []*series{{t: target{key: "redis-incr", label: "Redis INCR"}, res: map[int]Result{1: ok, 16: {Errors: 7}}}}
	rep.failovers = []failoverGroup{{label: "kill", runs: []failoverRun{{res: Result{Ops: 3, Timeline: []result.Bucket{{OK: 3}}}}}}}
	rep.cfg.outDir = dir
	if err := rep.write(); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(smokeCheck(rep, dir), "\n")
	if !strings.Contains(got, "Redis INCR at 16 clients: no successful call") {
		t.Fatalf("smokeCheck missed the failed target:\n%s", got)
	}
	rep.ids[0].res[16] = ok
	rep.skipped = []string{"Redis: redis-server not installed"}
	rep.notInstalled = rep.skipped
	for _, p := range smokeCheck(rep, dir) {
		if !strings.HasPrefix(p, "plot ") && !strings.HasPrefix(p, "report") {
			t.Errorf("unexpected problem: %s", p)
		}
	}
	rep.notInstalled = nil
	if got := strings.Join(smokeCheck(rep, dir), "\n"); !strings.Contains(got, "left out although installed") {
		t.Fatalf("a peer that failed to start passed:\n%s", got)
	}
}

func TestCheckSVG(t *testing.T) {
	dir := t.TempDir()
	for name, c := range map[string]struct {
		svg string
		ok  bool
	}{
		"good":      {`<svg xmlns="http://www.w3.org/2000/svg"><polyline points="0,0 1,1"/></svg>`, true},
		"truncated": {`<svg xmlns="http://www.w3.org/2000/svg"><polyline points="0,0 1,1"/>`, false},
		"empty":     {`<svg xmlns="http://www.w3.org/2000/svg"><text>no data</text></svg>`, false},
		"nan":       {`<svg xmlns="http://www.w3.org/2000/svg"><polyline points="0,NaN"/></svg>`, false},
		"html":      {`<html><polyline/></html>`, false},
	} {
		p := filepath.Join(dir, name+".svg")
		if err := os.WriteFile(p, []byte(c.svg), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := checkSVG(p); (err == nil) != c.ok {
			t.Errorf("%s: checkSVG = %v, want ok %v", name, err, c.ok)
		}
	}
	if checkSVG(filepath.Join(dir, "missing.svg")) == nil {
		t.Error("a missing plot passed")
	}
}
