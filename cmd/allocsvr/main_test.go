package main

import (
	"os"
	"testing"

	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// TestMain builds storesvr and allocsvr once for this package's
// real-process tests (launchtest.StartCluster).
func TestMain(m *testing.M) {
	os.Exit(launchtest.Main(m))
}
