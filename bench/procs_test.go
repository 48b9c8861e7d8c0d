package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/bench/loadgen/result"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// Result is the JSON line bench/loadgen prints.
type Result = result.Result

// TestMain removes the binaries the benchmarks built.
func TestMain(m *testing.M) {
	os.Exit(launchtest.Main(m))
}

// bins is the directory holding storesvr and allocsvr (launchtest.Bins)
// and loadgen, built once per test process.
func bins(tb testing.TB) string {
	tb.Helper()
	dir := launchtest.BinDir(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := launch.BuildPackages(ctx, dir, nil, "./bench/loadgen"); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// loadgen runs the load generator as its own process and parses its line.
func loadgen(tb testing.TB, args ...string) Result {
	tb.Helper()
	cmd := exec.Command(filepath.Join(bins(tb), "loadgen"), args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("loadgen %v: %v\n%s", args, err, stderr.String())
	}
	var r Result
	if err := json.Unmarshal(out, &r); err != nil {
		tb.Fatalf("loadgen output %q: %v", out, err)
	}
	return r
}

// startProc starts a helper process (bare handler, redis) killed at cleanup.
func startProc(tb testing.TB, name string, args ...string) {
	tb.Helper()
	cmd := exec.Command(name, args...)
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", name, err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

// startCluster launches real processes with the repo's binaries.
func startCluster(tb testing.TB, stores, allocs int, allocArgs ...string) *launch.Cluster {
	tb.Helper()
	return startQuiet(tb, launch.Options{Stores: stores, Allocs: allocs, AllocArgs: allocArgs})
}

// startQuiet is startCluster with every option; it skips under -short (see
// launchtest.Start). The processes' start and kill lines are not logged:
// a benchmark's log is cut after a few lines when not verbose, and the
// lines it logs itself (the failover gaps) must stay.
func startQuiet(tb testing.TB, opts launch.Options) *launch.Cluster {
	tb.Helper()
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	return launchtest.Start(tb, opts)
}

func createTag(tb testing.TB, c *launch.Cluster, tag string, step int64) {
	tb.Helper()
	launchtest.CreateTag(tb, c, tag, step)
}

func leaderURL(tb testing.TB, c *launch.Cluster) (*launch.Proc, string) {
	tb.Helper()
	p := launchtest.Leader(tb, c)
	return p, p.URL()
}

// restart kills p if it runs, starts it again and waits until it is ready.
func restart(tb testing.TB, c *launch.Cluster, p *launch.Proc) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Restart(ctx); err != nil {
		tb.Fatal(err)
	}
	if err := c.WaitReady(ctx, p); err != nil {
		tb.Fatal(err)
	}
}

// median of ds (the upper one of an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
