package seq

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/seqsvr/seqsvr/internal/dirlock"
)

// TestGoldenBaseInstance: the per-key instance file the base release
// (jepsen/upgrade-base, 0.1.0) wrote for node a1 gives an upgraded
// allocsvr on that data dir the same instance ID, so the store hands it
// its sections at once instead of after the old lease.
func TestGoldenBaseInstance(t *testing.T) {
	if !dirlock.Supported {
		t.Skip("no directory lock here: every start gets a new ID")
	}
	b, err := os.ReadFile("testdata/base-0.1.0/seq-instance.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, instanceFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	id, release, err := LoadInstance(dir, "a1")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if id != "PYQD6YC4WTLZPWSAVMUZ26G73U" {
		t.Fatalf("instance ID %q, want the base release's", id)
	}
}
