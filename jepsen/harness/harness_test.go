package harness

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/history"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

// binDir is shared by the tests of this package: one faults build.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "seqsvr-jepsen-bin-")
	if err != nil {
		panic(err)
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runCfg runs cfg with a deadline inside the test's own, so a stuck run
// ends through Run's cleanup (processes, namespaces) rather than through
// the test binary's timeout panic.
func runCfg(t *testing.T, cfg Config) *Report {
	t.Helper()
	limit := 4 * time.Minute
	if dl, ok := t.Deadline(); ok {
		limit = min(limit, time.Until(dl)-30*time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cfg.Seed = 42
	cfg.BinDir = binDir
	cfg.OutDir = filepath.Join(t.TempDir(), cfg.Name)
	rep, err := Run(ctx, cfg)
	if err != nil {
		t.Fatalf("run %s: %v", cfg.Name, err)
	}
	t.Logf("\n%s", rep.Table())
	return rep
}

// TestSmoke is the short fault run of `make test`: leader kills, pauses,
// clock jumps and (as root) a partition; every checker must pass.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real-process fault run")
	}
	rep := runCfg(t, Smoke(40*time.Second, nemesis.NetAvailable() == nil))
	if rep.FaultTotal == 0 {
		t.Fatal("no fault was injected")
	}
	if !rep.OK {
		t.Fatalf("checkers failed: %v", rep.Failed())
	}
	// Every serving path carried calls that were answered (Progress
	// fails a path with none answered; this fails a path left out), and
	// the allocsvrs' fronts answered some of them themselves.
	for _, p := range history.Paths {
		if rep.OpsByPath[p][1] == 0 {
			t.Errorf("serving path %s: no answered call (%v)", p, rep.OpsByPath[p])
		}
	}
	front := int64(0)
	for _, a := range []string{"a1", "a2"} {
		front += rep.FrontAnswered[a]
	}
	if front == 0 {
		t.Errorf("the allocsvrs' HTTP/1.1 fronts answered nothing: %v", rep.FrontAnswered)
	}
}

// TestUpgradeSmoke is the short upgrade scenario of `make test`: the base
// release's binaries replaced one at a time under load, a leader kill
// while mixed, a rollback; every checker must pass.
func TestUpgradeSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real-process upgrade run")
	}
	rep := runCfg(t, UpgradeSmoke(upgradeMinDuration))
	if !rep.OK {
		t.Fatalf("checkers failed: %v", rep.Failed())
	}
}

// TestPlantedBugs proves the checkers can fail: with each known bug
// planted in the servers, the run must be reported as failing, by the
// checker that watches for that bug's symptom.
func TestPlantedBugs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real-process fault runs")
	}
	for _, bug := range QuickBugs() {
		t.Run(bug, func(t *testing.T) {
			rep := runCfg(t, PlantedBug(bug, 12*time.Second))
			if ok, why := Caught(rep, bug); !ok {
				t.Fatalf("planted bug %s not caught: %s", bug, why)
			} else {
				t.Logf("caught by %s", why)
			}
		})
	}
}
