package nemesis

import (
	"os"
	"testing"

	"github.com/seqsvr/seqsvr/internal/cluster/clustertest"
)

// TestMain removes the binaries clustertest built for the real-process
// tests.
func TestMain(m *testing.M) {
	os.Exit(clustertest.Main(m))
}
