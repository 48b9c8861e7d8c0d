// Package proctest runs the cmd packages' real-process tests: it builds
// storesvr and allocsvr once per test binary and starts clusters of them
// on free loopback ports, killed when the test ends.
package proctest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/cluster"
)

// binDir holds the binaries Main built.
var binDir string

// BinDir is the directory holding the storesvr and allocsvr that Main built.
func BinDir() string { return binDir }

// Main builds the binaries into a temporary directory named after pkg,
// runs the tests and removes the directory. TestMain passes its result to
// os.Exit.
func Main(m *testing.M, pkg string) int {
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

// StartCluster launches stores real storesvr processes and allocs
// allocsvrs and kills them when the test ends, logging the tail of every
// process's log if the test failed. It skips the test under -short.
func StartCluster(t *testing.T, stores, allocs int, storeArgs, allocArgs []string) *cluster.Cluster {
	t.Helper()
	if testing.Short() {
		t.Skip("real-process test")
	}
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
