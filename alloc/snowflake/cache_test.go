package snowflake

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/clock/clocktest"
	"github.com/seqsvr/seqsvr/internal/durable"
)

// TestGeneratorExtendsRealCache runs the generator on the file-backed
// cache and checks that its background extension really moves the
// durable mark: after the first ID, no ID's timestamp is ever above the
// mark on disk before the call, so no ID waits for an fsync. (Before the
// fix the cache ignored the extension, because the mark still covered the
// timestamp it was given, and once a second an ID passed the mark and
// wrote it on the ID path.)
func TestGeneratorExtendsRealCache(t *testing.T) {
	dir := t.TempDir()
	c, err := openCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.close)
	clk := clocktest.New(t0)
	g := newTestGen(t, 1, 0, clk, withHighWater(c, 0, time.Second))
	mustID(t, g) // the first one writes on the ID path: nothing is durable yet
	g.extWG.Wait()
	for i := range 100 { // 10 s of IDs, one every 100 ms
		clk.Advance(100 * time.Millisecond)
		before := readCache(t, dir).HighWaterMs
		ts := split(mustID(t, g)).ts
		if ts > before {
			t.Fatalf("ID %d at %d ms: timestamp %d above the durable mark %d (+%d ms): the ID path had to write it",
				i, ts-t0.UnixMilli(), ts, before, ts-before)
		}
		g.extWG.Wait()
		if after := readCache(t, dir).HighWaterMs; after < ts+time.Second.Milliseconds()/highWaterExtendFraction {
			t.Fatalf("ID %d: durable mark %d only %d ms ahead of %d after the extension", i, after, after-ts, ts)
		}
	}
}

// The cache reads the file older releases wrote (JSON with "format": 1
// and no header), and the next write upgrades it.
func TestCacheReadsLegacyFile(t *testing.T) {
	dir := t.TempDir()
	legacy := `{"format": 1, "node_id": "n1", "worker_id": 7, "high_water_ms": 1767225601000, "instance_id": "i1"}`
	if err := os.WriteFile(filepath.Join(dir, cacheFile), []byte(legacy), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := openCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	d, ok := c.loaded()
	if !ok || d.NodeID != "n1" || d.WorkerID != 7 || d.HighWaterMs != 1767225601000 || d.InstanceID != "i1" {
		t.Fatalf("loaded %+v, %v", d, ok)
	}
	if _, err := c.Reserve(d.HighWaterMs+1, d.HighWaterMs+1000); err != nil {
		t.Fatal(err)
	}
	c.close()
	v, _, err := durable.Read(filepath.Join(dir, cacheFile), cacheVersion)
	if err != nil || v != cacheVersion {
		t.Fatalf("after a write: version %d, %v", v, err)
	}
	c, err = openCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if d, ok := c.loaded(); !ok || d.HighWaterMs != 1767225602000 || d.InstanceID != "i1" {
		t.Fatalf("reopened %+v, %v", d, ok)
	}
}

// A cache from a newer release is refused, naming the file and both
// versions: ignoring it could drop a high-water mark this release cannot read.
func TestCacheRefusesNewerFormat(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, cacheFile)
	if err := durable.Write(path, cacheVersion+1, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := openCache(dir)
	if !errors.Is(err, durable.ErrNewerFormat) || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want ErrNewerFormat naming %s", err, path)
	}
}
