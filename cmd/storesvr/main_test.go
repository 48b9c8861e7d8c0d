package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/cluster"
)

// binDir holds storesvr and allocsvr built once for this package's
// real-process tests.
var binDir string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "seqsvr-storesvr-bin-")
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

// startCluster launches n real storesvr processes (and allocs allocsvrs)
// on free loopback ports and kills them when the test ends.
func startCluster(t *testing.T, stores, allocs int, storeArgs, allocArgs []string) *cluster.Cluster {
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
