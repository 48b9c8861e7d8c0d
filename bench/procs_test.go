package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/jepsen/cluster"
)

// Result mirrors the JSON line bench/loadgen prints.
type Result struct {
	Target      string  `json:"target"`
	Concurrency int     `json:"concurrency"`
	Count       int     `json:"count"`
	Seconds     float64 `json:"seconds"`
	Ops         int64   `json:"ops"`
	IDs         int64   `json:"ids"`
	Errors      int64   `json:"errors"`
	FirstError  string  `json:"first_error"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	IDsPerSec   float64 `json:"ids_per_sec"`
	P50us       int64   `json:"p50_us"`
	P99us       int64   `json:"p99_us"`
	P999us      int64   `json:"p999_us"`
}

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// bins builds storesvr, allocsvr and loadgen once per test process.
func bins(tb testing.TB) string {
	tb.Helper()
	binOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		binDir, binErr = os.MkdirTemp("", "seqsvr-bench-bin-")
		if binErr != nil {
			return
		}
		if binErr = cluster.Build(ctx, binDir); binErr != nil {
			return
		}
		root, err := cluster.ModuleRoot(ctx)
		if err != nil {
			binErr = err
			return
		}
		cmd := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(binDir, "loadgen"), "./bench/loadgen")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("build loadgen: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		tb.Fatal(binErr)
	}
	return binDir
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
func startCluster(tb testing.TB, stores, allocs int, allocArgs ...string) *cluster.Cluster {
	tb.Helper()
	return launch(tb, cluster.Options{Stores: stores, Allocs: allocs, AllocArgs: allocArgs})
}

// launch is startCluster with every option (BinDir and Dir are filled in).
// Under -short it skips: real processes take tens of seconds.
func launch(tb testing.TB, opts cluster.Options) *cluster.Cluster {
	tb.Helper()
	if testing.Short() {
		tb.Skip("starts real processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	opts.BinDir, opts.Dir = bins(tb), tb.TempDir()
	c, err := cluster.Start(ctx, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	return c
}

func createTag(tb testing.TB, c *cluster.Cluster, tag string, step int64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.CreateTag(ctx, &seqsvrv1.CreateTagRequest{Tag: tag, Step: step}); err != nil {
		tb.Fatal(err)
	}
}

func leaderURL(tb testing.TB, c *cluster.Cluster) (*cluster.Proc, string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := c.Leader(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return p, p.URL()
}

// restart kills p if it runs, starts it again and waits until it is ready.
func restart(tb testing.TB, c *cluster.Cluster, p *cluster.Proc) {
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
