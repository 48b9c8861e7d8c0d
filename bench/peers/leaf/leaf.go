// Package leaf is a Leaf-segment ID allocator over MySQL/MariaDB, written
// the way Meituan Leaf's SegmentIDGenImpl works, for the peer benchmark:
//
//   - each tag (Leaf's biz_tag) has a buffer of two segments; IDs come from
//     the current one with an atomic increment under a read lock;
//   - when less than 90% of the current segment is left (10% used) and the
//     next one is not ready, one background load fetches the next segment;
//   - when the current one runs out, the caller waits for a running load,
//     then switches to the next segment under the write lock, or fails if
//     neither segment has IDs ("both segments not ready");
//   - a segment is fetched by Leaf's statement pair in one transaction:
//     UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ? then
//     SELECT biz_tag, max_id, step ... (the dynamic-step variant adds a
//     custom step instead of the column's);
//   - the step doubles (up to 1,000,000) when the previous segment lasted
//     less than 15 minutes, and halves (down to the table's step) past 30.
//
// It is a reimplementation for measurement, not Leaf's code: Leaf itself is
// Java, so this measures the algorithm over the same database, not the JVM.
package leaf

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// MaxStep caps the dynamic step, as Leaf's MAX_STEP does.
const MaxStep = 1_000_000

// segmentDuration is the lifetime Leaf aims a segment at.
const segmentDuration = 15 * time.Minute

// ErrNotReady is returned when the current segment is used up and the next
// one could not be loaded (Leaf's "Both two segments ... are not ready").
var ErrNotReady = errors.New("leaf: both segments of the buffer are not ready")

// ErrUnknownTag is returned for a tag with no leaf_alloc row.
var ErrUnknownTag = errors.New("leaf: unknown tag")

// Alloc is one leaf_alloc row after a raise.
type Alloc struct {
	Tag   string
	MaxID int64
	Step  int64
}

// Store raises a tag's max_id and returns the row, in one transaction.
// step 0 raises by the row's own step.
type Store interface {
	Raise(ctx context.Context, tag string, step int64) (Alloc, error)
}

// segment is [value, max) of one tag.
type segment struct {
	value atomic.Int64 // next ID to hand out
	max   int64        // exclusive
	step  int64
}

func (s *segment) idle() int64 { return s.max - s.value.Load() }

// buffer is a tag's double buffer.
type buffer struct {
	tag     string
	mu      sync.RWMutex
	segs    [2]*segment
	cur     int
	ready   bool        // the other segment is loaded
	loading atomic.Bool // a background load runs

	initMu  sync.Mutex
	initOK  bool
	step    int64 // the step in force
	minStep int64 // the row's step
	updated time.Time
}

// Gen hands out IDs for every tag.
type Gen struct {
	store Store
	now   func() time.Time
	// loadTimeout bounds one background load.
	loadTimeout time.Duration
	// Errors reports background load failures (they surface to callers
	// only as ErrNotReady when the next segment is needed).
	Errors func(tag string, err error)

	mu   sync.Mutex
	bufs map[string]*buffer
}

// New returns a generator over store.
func New(store Store) *Gen {
	return &Gen{store: store, now: time.Now, loadTimeout: 5 * time.Second, bufs: map[string]*buffer{}, Errors: func(string, error) {}}
}

func (g *Gen) buffer(tag string) *buffer {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := g.bufs[tag]
	if b == nil {
		b = &buffer{tag: tag, segs: [2]*segment{{}, {}}}
		g.bufs[tag] = b
	}
	return b
}

// Next returns the next ID of tag.
func (g *Gen) Next(ctx context.Context, tag string) (int64, error) {
	b := g.buffer(tag)
	b.initMu.Lock()
	if !b.initOK {
		if err := g.load(ctx, b, b.segs[b.cur]); err != nil {
			b.initMu.Unlock()
			return 0, err
		}
		b.initOK = true
	}
	b.initMu.Unlock()
	for {
		b.mu.RLock()
		s := b.segs[b.cur]
		if !b.ready && float64(s.idle()) < 0.9*float64(s.step) && b.loading.CompareAndSwap(false, true) {
			go g.loadNext(b)
		}
		v := s.value.Add(1) - 1
		ok := v < s.max
		b.mu.RUnlock()
		if ok {
			return v, nil
		}
		// The current segment is used up: wait for a running load, then
		// switch under the write lock.
		for b.loading.Load() {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
			time.Sleep(time.Millisecond)
		}
		b.mu.Lock()
		s = b.segs[b.cur]
		if v := s.value.Add(1) - 1; v < s.max {
			b.mu.Unlock()
			return v, nil
		}
		if !b.ready {
			b.mu.Unlock()
			return 0, ErrNotReady
		}
		b.cur, b.ready = 1-b.cur, false
		b.mu.Unlock()
	}
}

// loadNext fills the segment after the current one in the background.
func (g *Gen) loadNext(b *buffer) {
	ctx, cancel := context.WithTimeout(context.Background(), g.loadTimeout)
	defer cancel()
	next := b.segs[1-b.cur]
	b.initMu.Lock()
	err := g.load(ctx, b, next)
	b.initMu.Unlock()
	if err != nil {
		g.Errors(b.tag, err)
	} else {
		b.mu.Lock()
		b.ready = true
		b.mu.Unlock()
	}
	b.loading.Store(false)
}

// load fetches a segment into s, adapting the step as Leaf does. The
// caller holds b.initMu (the step fields are shared by both segments).
func (g *Gen) load(ctx context.Context, b *buffer, s *segment) error {
	var (
		a   Alloc
		err error
	)
	now := g.now()
	switch {
	case !b.initOK || b.updated.IsZero():
		if a, err = g.store.Raise(ctx, b.tag, 0); err != nil {
			return err
		}
		b.step, b.minStep = a.Step, a.Step
	default:
		next := b.step
		switch d := now.Sub(b.updated); {
		case d < segmentDuration:
			if next*2 <= MaxStep {
				next *= 2
			}
		case d < 2*segmentDuration:
		default:
			if next/2 >= b.minStep {
				next /= 2
			}
		}
		if a, err = g.store.Raise(ctx, b.tag, next); err != nil {
			return err
		}
		b.step, b.minStep = next, a.Step
	}
	if b.initOK {
		b.updated = now
	}
	s.max, s.step = a.MaxID, b.step
	s.value.Store(a.MaxID - b.step)
	return nil
}

// SQL is the Store over a leaf_alloc table in MySQL or MariaDB.
type SQL struct{ DB *sql.DB }

// Schema is Leaf's leaf_alloc table.
const Schema = `CREATE TABLE IF NOT EXISTS leaf_alloc (
  biz_tag varchar(128) NOT NULL DEFAULT '',
  max_id bigint(20) NOT NULL DEFAULT '1',
  step int(11) NOT NULL,
  description varchar(256) DEFAULT NULL,
  update_time timestamp NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (biz_tag)
) ENGINE=InnoDB`

// Raise runs Leaf's statement pair in one transaction.
func (s SQL) Raise(ctx context.Context, tag string, step int64) (Alloc, error) {
	tx, err := s.DB.BeginTx(ctx, nil)
	if err != nil {
		return Alloc{}, err
	}
	defer func() { _ = tx.Rollback() }()
	var res sql.Result
	if step == 0 {
		res, err = tx.ExecContext(ctx, "UPDATE leaf_alloc SET max_id = max_id + step WHERE biz_tag = ?", tag)
	} else {
		res, err = tx.ExecContext(ctx, "UPDATE leaf_alloc SET max_id = max_id + ? WHERE biz_tag = ?", step, tag)
	}
	if err != nil {
		return Alloc{}, err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return Alloc{}, fmt.Errorf("%w %q", ErrUnknownTag, tag)
	}
	a := Alloc{Tag: tag}
	if err := tx.QueryRowContext(ctx, "SELECT max_id, step FROM leaf_alloc WHERE biz_tag = ?", tag).Scan(&a.MaxID, &a.Step); err != nil {
		return Alloc{}, err
	}
	return a, tx.Commit()
}
