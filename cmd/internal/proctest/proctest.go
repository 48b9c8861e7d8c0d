// Package proctest runs the cmd packages' real-process tests: it builds
// storesvr and allocsvr once per test binary and starts clusters of them
// on free loopback ports, killed when the test ends. Under -short nothing
// is built and every real-process test skips.
package proctest

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/cluster"
)

// binDir holds the binaries Main built.
var binDir string

// BinDir is the directory holding the storesvr and allocsvr that Main built.
func BinDir() string { return binDir }

// Main builds the binaries into a temporary directory named after pkg,
// runs the tests and removes the directory; under -short it only runs the
// tests. TestMain passes its result to os.Exit.
func Main(m *testing.M, pkg string) int {
	flag.Parse() // testing.Short needs the flags parsed
	if testing.Short() {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "seqsvr-"+pkg+"-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := cluster.Build(ctx, binDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// SkipShort skips a real-process test under -short (Main built nothing).
func SkipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("real-process test")
	}
}

// StartCluster launches stores real storesvr processes and allocs
// allocsvrs and kills them when the test ends, logging the tail of every
// process's log if the test failed. It skips the test under -short.
func StartCluster(t *testing.T, stores, allocs int, storeArgs, allocArgs []string) *cluster.Cluster {
	t.Helper()
	SkipShort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Options{
		BinDir: binDir, Dir: t.TempDir(), Stores: stores, Allocs: allocs,
		StoreArgs: storeArgs, AllocArgs: allocArgs, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			for _, p := range c.All() {
				if b, err := os.ReadFile(p.LogPath); err == nil {
					t.Logf("---- %s log (tail) ----\n%s", p.Name, tail(string(b), 3000))
				}
			}
		}
	})
	return c
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// FastHTTPOff is the flag that turns the HTTP/1.1 front off.
const FastHTTPOff = "--fast-http=false"

// EachFastHTTP runs f as two subtests: the processes with the HTTP/1.1
// front (the default, flags empty) and without it (flags holds
// FastHTTPOff), so every answer is checked on both paths. f passes flags
// to every process it starts.
func EachFastHTTP(t *testing.T, f func(t *testing.T, flags []string)) {
	t.Run("fast-http=true", func(t *testing.T) { f(t, nil) })
	t.Run("fast-http=false", func(t *testing.T) { f(t, []string{FastHTTPOff}) })
}

// Context is a context ending after d or when the test ends.
func Context(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// WaitUntil polls cond every 10 ms until it holds, failing the test with
// what when ctx ends first.
func WaitUntil(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out waiting for %s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Metric reads one unlabelled series from the /metrics of the process at
// base, and whether it is there.
func Metric(t *testing.T, base, name string) (float64, bool) {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	lines := bufio.NewScanner(res.Body)
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %q", name, lines.Text())
			}
			return f, true
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatalf("%s/metrics: %v", base, err)
	}
	return 0, false
}

// WantFront fails unless the process at base runs the HTTP/1.1 front
// exactly when flags leave it on: only the front exports its counter.
func WantFront(t *testing.T, base string, flags []string) {
	t.Helper()
	on := !slices.Contains(flags, FastHTTPOff)
	if _, has := Metric(t, base, "seqsvr_http_fast_requests_total"); has != on {
		t.Fatalf("%s: front counter exported %v, want %v (flags %q)", base, has, on, flags)
	}
}
