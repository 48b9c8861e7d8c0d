package main

import (
	"os"
	"testing"

	"github.com/seqsvr/seqsvr/cmd/internal/proctest"
)

// TestMain builds storesvr and allocsvr once for this package's
// real-process tests (proctest.StartCluster).
func TestMain(m *testing.M) {
	os.Exit(proctest.Main(m, "allocsvr"))
}
