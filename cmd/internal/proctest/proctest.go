// Package proctest runs the cmd packages' real-process tests on
// internal/cluster/clustertest: it builds storesvr and allocsvr once per
// test binary (not under -short, where those tests skip) and starts
// clusters of them on free loopback ports, killed when the test ends.
package proctest

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/seqsvr/seqsvr/internal/cluster"
	"github.com/seqsvr/seqsvr/internal/cluster/clustertest"
)

// BinDir is the directory holding the storesvr and allocsvr that Main
// built ("" if the build failed, in which case Main fails first).
func BinDir() string {
	dir, _ := clustertest.Bins()
	return dir
}

// Main builds the binaries, runs the tests of package pkg and removes the
// binaries. TestMain passes its result to os.Exit.
func Main(m *testing.M, pkg string) int {
	flag.Parse() // for testing.Short
	if !testing.Short() {
		if _, err := clustertest.Bins(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", pkg, err)
			return 1
		}
	}
	return clustertest.Main(m)
}

// StartCluster launches stores real storesvr processes and allocs
// allocsvrs with the extra flags given, and kills them when the test ends
// (see clustertest.Start). It skips the test under -short.
func StartCluster(t *testing.T, stores, allocs int, storeArgs, allocArgs []string) *cluster.Cluster {
	t.Helper()
	return clustertest.Start(t, cluster.Options{Stores: stores, Allocs: allocs, StoreArgs: storeArgs, AllocArgs: allocArgs})
}
