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
)

// Files of the snowflake cache in --data-dir.
const (
	cacheFile   = "snowflake-worker.json"
	lockFile    = "snowflake-worker.lock"
	cacheFormat = 1
)

// cacheData is what survives a restart. HighWaterMs is written (and
// fsync'd) before any ID with a larger timestamp is issued, so a restarted
// process that starts above it never repeats an ID. LeaseValidUntilMs is
// the local wall-clock time until which the last successful registration or
// renewal lets this node issue IDs (lease TTL minus the fence margin,
// counted from when that request was sent).
type cacheData struct {
	Format            int    `json:"format"`
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
	dir     string
	aheadMs int64
	unlock  func()

	mu   sync.Mutex
	data cacheData
	ok   bool // data was loaded from disk and parsed
}

// openCache locks dir and loads the cache. A missing or unreadable cache
// is not an error (ok stays false); a lock held by another process is.
func openCache(dir string, aheadMs int64) (*cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("snowflake cache: %w", err)
	}
	unlock, err := dirlock.Lock(filepath.Join(dir, lockFile))
	if err != nil {
		return nil, fmt.Errorf("snowflake cache %s: %w", dir, err)
	}
	c := &cache{dir: dir, aheadMs: aheadMs, unlock: unlock}
	b, err := os.ReadFile(filepath.Join(dir, cacheFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		unlock()
		return nil, fmt.Errorf("snowflake cache: %w", err)
	default:
		var d cacheData
		if json.Unmarshal(b, &d) == nil && d.Format == cacheFormat {
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
	d.Format = cacheFormat
	if err := c.write(d); err != nil {
		return err
	}
	c.data = d
	return nil
}

// Reserve makes a high-water mark of at least ms+ahead durable and returns
// the durable mark. The mark never moves down here.
func (c *cache) Reserve(ms int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.data.HighWaterMs >= ms {
		return c.data.HighWaterMs, nil
	}
	d := c.data
	d.Format = cacheFormat
	d.HighWaterMs = ms + c.aheadMs
	if err := c.write(d); err != nil {
		return 0, err
	}
	c.data = d
	return d.HighWaterMs, nil
}

// write replaces the file atomically: temp file, fsync, rename, fsync dir.
func (c *cache) write(d cacheData) error {
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(c.dir, cacheFile+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if _, err = tmp.Write(append(b, '\n')); err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(c.dir, cacheFile)); err != nil {
		return err
	}
	dir, err := os.Open(c.dir)
	if err != nil {
		return err
	}
	defer dir.Close()
	return dir.Sync()
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
