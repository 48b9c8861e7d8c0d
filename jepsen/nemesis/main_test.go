package nemesis

import (
	"os"
	"testing"

	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// TestMain removes the binaries launchtest built for the real-process
// tests.
func TestMain(m *testing.M) {
	os.Exit(launchtest.Main(m))
}
