// Package launchtest runs real storesvr and allocsvr processes from tests
// and benchmarks. What it adds to package launch: binaries built once per
// test binary, clusters killed when their test ends, failures reported
// through the test instead of returned, and the real-process tests'
// shared vocabulary (the front on and off, /metrics reads, the tests' own
// retries, connection attacks and name floods on a process started with
// limits).
//
// Guarantees:
//   - The binaries are built at most once per test binary, into a
//     temporary directory that Main removes after the tests.
//   - Every cluster Start launches is killed when its test ends; if the
//     test failed, the tail of every process's log is logged first.
//   - Under -short, Start skips the test: real processes take seconds.
package launchtest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
)

// buildTimeout bounds the one build of the binaries.
const buildTimeout = 5 * time.Minute

var bins struct {
	once sync.Once
	dir  string
	err  error
}

// Bins builds storesvr and allocsvr (launch.Build) at the first call and
// returns the directory holding them; later calls return the same
// directory, or the same error.
func Bins() (string, error) {
	bins.once.Do(func() {
		dir, err := os.MkdirTemp("", "seqsvr-"+filepath.Base(os.Args[0])+"-bin-")
		if err != nil {
			bins.err = err
			return
		}
		bins.dir = dir
		ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
		defer cancel()
		bins.err = launch.Build(ctx, dir)
	})
	return bins.dir, bins.err
}

// BinDir is Bins for a test: a build failure fails tb.
func BinDir(tb testing.TB) string {
	tb.Helper()
	dir, err := Bins()
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

// Main runs the tests and then removes what Bins built. TestMain passes
// its result to os.Exit.
func Main(m *testing.M) int {
	code := m.Run()
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
	return code
}

// Start launches a cluster described by opts and kills it when the test
// ends. BinDir defaults to the binaries of Bins, Dir to a fresh temporary
// directory, Logf to tb.Logf. It skips the test under -short.
func Start(tb testing.TB, opts launch.Options) *launch.Cluster {
	tb.Helper()
	if testing.Short() {
		tb.Skip("-short: real-process test")
	}
	if opts.BinDir == "" {
		opts.BinDir = BinDir(tb)
	}
	if opts.Dir == "" {
		opts.Dir = tb.TempDir()
	}
	if opts.Logf == nil {
		opts.Logf = tb.Logf
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := launch.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Launch(ctx); err != nil {
		// The logs are in the test's temporary directory, which is gone
		// by the time anyone reads "a1 exited before ready; log: ...":
		// show why a process did not start.
		c.Close()
		logTails(tb, c)
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		c.Close()
		if tb.Failed() {
			logTails(tb, c)
		}
	})
	return c
}

// logTails logs the end of every process's log.
func logTails(tb testing.TB, c *launch.Cluster) {
	tb.Helper()
	for _, p := range c.All() {
		if b, err := os.ReadFile(p.LogPath); err == nil {
			tb.Logf("---- %s log (tail) ----\n%s", p.Name, tail(string(b), 3000))
		}
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// CreateTag creates tag with step through c.CreateTag, retrying for up to
// 30 s while the cluster settles.
func CreateTag(tb testing.TB, c *launch.Cluster, tag string, step int64) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.CreateTag(ctx, &seqsvrv1.CreateTagRequest{Tag: tag, Step: step}); err != nil {
		tb.Fatal(err)
	}
}

// Leader waits up to 30 s for c's leader.
func Leader(tb testing.TB, c *launch.Cluster) *launch.Proc {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := c.Leader(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Tmpfs mounts a tmpfs of size bytes on dir for the test and unmounts it
// when the test ends (register it before anything that must stop using
// dir first, since cleanups run last-in first-out). When mounting is not
// possible (not root, not Linux) the test is skipped, except under
// CI=true, where it fails.
func Tmpfs(tb testing.TB, dir string, size int64) {
	tb.Helper()
	if err := launch.MountTmpfs(dir, size); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("%v (CI=true: disk-full tests must run)", err)
		}
		tb.Skipf("cannot mount a small file system to fill (%v); run as root on Linux", err)
	}
	tb.Cleanup(func() {
		if err := launch.Unmount(dir); err != nil {
			tb.Errorf("%v", err)
		}
	})
}
