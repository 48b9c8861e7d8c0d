package snowflake

import (
	"os"
	"path/filepath"
	"testing"
)

// testdata/base-0.1.0/snowflake-worker.json was written by the base
// release (jepsen/upgrade-base, 0.1.0) for node a1 with worker ID 0.
const baseCache = "testdata/base-0.1.0/snowflake-worker.json"

// openGoldenCache opens a copy of the golden file as the cache of a fresh
// data dir.
func openGoldenCache(t *testing.T, golden string) *cache {
	t.Helper()
	b, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, cacheFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := openCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.unlock)
	return c
}

// TestGoldenBaseCache: the base release's cache is read whole, so an
// upgraded allocsvr keeps its worker ID and never issues a timestamp
// below the base release's high-water mark.
func TestGoldenBaseCache(t *testing.T) {
	c := openGoldenCache(t, baseCache)
	d, ok := c.loaded()
	if !ok {
		t.Fatal("the base release's cache was not read")
	}
	if d.NodeID != "a1" || d.WorkerID != 0 || d.HighWaterMs != 1795671891333 || d.InstanceID != "4fcca2e84dafbe34436049c9" ||
		d.EpochMs != 1704067200000 || d.TimestampBits != 41 || d.WorkerBits != 10 || d.SequenceBits != 12 {
		t.Fatalf("read %+v", d)
	}
	if hw, err := c.Reserve(1, 1); err != nil || hw != 1795671891333 {
		t.Fatalf("Reserve below the mark: %d, %v; the mark must not move down", hw, err)
	}
}
