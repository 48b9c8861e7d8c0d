package doctest

import (
	"os"
	"testing"

	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// TestMain removes the binaries launchtest built once the tests are done.
func TestMain(m *testing.M) {
	os.Exit(launchtest.Main(m))
}
