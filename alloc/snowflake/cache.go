package snowflake

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/seqsvr/seqsvr/internal/dirlock"
	"github.com/seqsvr/seqsvr/internal/durable"
)

// Files of the snowflake cache in --data-dir.
const (
	cacheFile = "snowflake-worker.json"
	lockFile  = "snowflake-worker.lock"
	// cacheVersion is the durable header's version. Version 1 was the
	// same JSON with "format": 1 in it and no header (releases before
	// internal/durable); it is still read.
	cacheVersion = 2
	legacyFormat = 1
)

// cacheData is what survives a restart. HighWaterMs is written (and
// fsync'd) before any ID with a larger timestamp is issued, so a restarted
// process that starts above it never repeats an ID. LeaseValidUntilMs is
// the local wall-clock time until which the last successful registration or
// renewal lets this node issue IDs (lease TTL minus the fence margin,
// counted from when that request was sent).
type cacheData struct {
	Format            int    `json:"format,omitempty"` // legacy files only`
	NodeID            string `json:"node_id"`
	WorkerID          int64  `json:"worker_id"`
	EpochMs           int64  `json:"epoch_ms"`
	TimestampBits     int32  `json:"timestamp_bits"`
	WorkerBits        int32  `json:"worker_bits"`
	SequenceBits      int32  `json:"sequence_bits"`
	HighWaterMs       int64  `json:"high_water_ms"`
	LeaseValidUntilMs int64  `json:"lease_valid_until_ms"`
	LeaseExpiresMs    int64  `json:"lease_expires_ms"` // the store leader's clock
	InstanceID        string `json:"instance_id"`
}

// cache owns the cache file. It holds an exclusive lock on the data dir
// for the process lifetime: two processes sharing one cache could both
// start from it and serve the same worker ID.
type cache struct {
	dir    string
	unlock func()

	mu   sync.Mutex
	data cacheData
	ok   bool // data was loaded from disk and parsed
}

// openCache locks dir and loads the cache. A missing or unreadable cache
// is not an error (ok stays false); a lock held by another process is.
func openCache(dir string) (*cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("snowflake cache: %w", err)
	}
	unlock, err := dirlock.Lock(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("snowflake cache %s: %w", dir, err)
	}
	c := &cache{dir: dir, unlock: unlock}
	v, b, err := durable.Read(filepath.Join(dir, cacheFile), cacheVersion)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		unlock()
		return nil, fmt.Errorf("snowflake cache: %w", err)
	default:
		var d cacheData
		if json.Unmarshal(b, &d) == nil && (v == cacheVersion || d.Format == legacyFormat) {
			d.Format = 0
			c.data, c.ok = d, true
		}
	}
	return c, nil
}

// loaded returns the cache as read at open, if it was valid.
func (c *cache) loaded() (cacheData, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.data, c.ok
}

// update changes the cached record and writes it durably.
func (c *cache) update(f func(*cacheData)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.data
	f(&d)
	if err := c.write(d); err != nil {
		return err
	}
	c.data = d
	return nil
}

// Reserve makes a high-water mark of at least minMs durable and returns
// the durable mark. When the mark is below minMs it writes targetMs (at
// least minMs); otherwise it writes nothing. The mark never moves down.
//
// The generator asks for minMs = the issued timestamp, when an ID is
// about to pass the mark (on the ID path), and for minMs = one past the
// mark it knows, from its background extension: the extension must write
// even though the mark still covers every timestamp issued so far. (A
// Reserve that took one argument and wrote only when the mark was below
// it did nothing for the extension, so every extension became an fsync
// on the ID path once per generator ahead time: docs/benchmarks.md, Snowflake.)
func (c *cache) Reserve(minMs, targetMs int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data.HighWaterMs >= minMs {
		return c.data.HighWaterMs, nil
	}
	d := c.data
	d.HighWaterMs = max(minMs, targetMs)
	if err := c.write(d); err != nil {
		return 0, err
	}
	c.data = d
	return d.HighWaterMs, nil
}

// write replaces the file durably (internal/durable), owner-only (0600)
// as the cache file always was.
func (c *cache) write(d cacheData) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	return durable.Write(filepath.Join(c.dir, cacheFile), cacheVersion, append(b, '\n'), 0o600)
}

func (c *cache) close() {
	if c == nil {
		return
	}
	if c.unlock != nil {
		c.unlock()
		c.unlock = nil
	}
}
