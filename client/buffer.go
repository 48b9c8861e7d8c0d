package client

import (
	"context"
	"maps"
	"sync"
	"sync/atomic"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/spec"
)

// batch is one run of consecutive IDs, first..first+n-1, being handed
// out: a load's answer is one batch per range (usually one or two). pos
// is claimed with an atomic add, so the common case takes no lock and
// reads no memory but the batch's three words.
type batch struct {
	first   int64
	n       int64
	pos     atomic.Int64
	trigger int64 // the index whose taker starts the next load (10% into the load), -1: none here
}

// id is the ID at index i (< n) of b.
func (b *batch) id(i int64) int64 { return b.first + i }

// used reports whether every ID of the batch was claimed.
func (b *batch) used() bool { return b.pos.Load() >= b.n }

// left is how many IDs of b are unclaimed.
func (b *batch) left() int { return int(max(0, b.n-b.pos.Load())) }

// newBatches makes one batch per range of a load; the one holding the
// load's 10% point gets the trigger.
func newBatches(rs []idRange) []*batch {
	var total int64
	for _, r := range rs {
		total += r.len()
	}
	g := total / 10
	out := make([]*batch, len(rs))
	for k, r := range rs {
		nb := &batch{first: r.first, n: r.len(), trigger: -1}
		if g >= 0 && g < nb.n {
			nb.trigger = g
		}
		g -= nb.n
		out[k] = nb
	}
	return out
}

// tagBuffer is the local double buffer of one tag: cur (and rest, the
// other runs of the same load) is handed out while next is loaded in the
// background. Every load installed holds only IDs above every ID of the
// loads before it, so one client's IDs of a tag are unique and
// increasing even when a failover moves the loads to an allocsvr whose
// segment is behind.
type tagBuffer struct {
	c    *Client
	tag  string
	size int
	cur  atomic.Pointer[batch]

	mu      sync.Mutex
	rest    []*batch // the batches of cur's load after cur, in order
	next    []*batch // the next load's batches, nil until it is installed
	loading bool
	done    chan struct{} // closed when the load in flight ends
	err     error         // the last load's failure, nil after a success
	high    int64         // the largest ID installed so far
	home    *endpoint     // where the last batch came from: loads stay there while it works
}

// buffer returns tag's buffer, made on first use.
func (c *Client) buffer(tag string) (*tagBuffer, error) {
	// Most programs take IDs of one tag at a time: skip the map lookup.
	if b := c.lastBuf.Load(); b != nil && b.tag == tag {
		return b, nil
	}
	if b, ok := (*c.buffers.Load())[tag]; ok {
		c.lastBuf.Store(b)
		return b, nil
	}
	if err := spec.CheckTag(tag); err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	c.bufMu.Lock()
	defer c.bufMu.Unlock()
	old := *c.buffers.Load()
	if b, ok := old[tag]; ok {
		return b, nil
	}
	// Copy on write: readers never lock.
	m := maps.Clone(old)
	b := &tagBuffer{c: c, tag: tag, size: c.cfg.bufferSize}
	m[tag] = b
	c.buffers.Store(&m)
	return b, nil
}

func (b *tagBuffer) take(ctx context.Context) (int64, error) {
	if cur := b.cur.Load(); cur != nil {
		i := cur.pos.Add(1) - 1
		if i < cur.n && i != cur.trigger {
			return cur.first + i, nil
		}
		return b.claimed(ctx, cur, i)
	}
	return b.slow(ctx, nil)
}

// claimed finishes a take that claimed index i of cur: the trigger
// index starts the next load, an index past the end goes the slow way.
func (b *tagBuffer) claimed(ctx context.Context, cur *batch, i int64) (int64, error) {
	if i < cur.n {
		b.refill() // i is the trigger
		return cur.id(i), nil
	}
	return b.slow(ctx, cur)
}

// slow waits for a batch after cur and takes from it.
func (b *tagBuffer) slow(ctx context.Context, cur *batch) (int64, error) {
	for {
		if err := b.wait(ctx, cur); err != nil {
			return 0, err
		}
		if cur = b.cur.Load(); cur == nil {
			continue
		}
		i := cur.pos.Add(1) - 1
		if i < cur.n {
			if i == cur.trigger {
				b.refill()
			}
			return cur.id(i), nil
		}
	}
}

// refill starts loading the next batch unless one is loaded or loading.
func (b *tagBuffer) refill() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.loading && b.next == nil {
		b.startLoad()
	}
}

// wait is the slow path, once cur is used up: switch to the next batch
// of cur's load or of the next load, or start a load and wait for it (at
// most until ctx ends).
func (b *tagBuffer) wait(ctx context.Context, cur *batch) error {
	b.mu.Lock()
	if b.cur.Load() != cur {
		b.mu.Unlock()
		return nil // another caller switched batches
	}
	if len(b.rest) > 0 {
		b.cur.Store(b.rest[0])
		b.rest = b.rest[1:]
		b.mu.Unlock()
		return nil
	}
	if b.next != nil {
		b.cur.Store(b.next[0])
		b.rest, b.next = b.next[1:], nil
		b.mu.Unlock()
		return nil
	}
	if !b.loading {
		b.startLoad()
	}
	done := b.done
	b.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return ctxError(ctx, "NextID "+b.tag, nil)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cur.Load() == cur && b.next == nil && b.err != nil {
		return b.err
	}
	return nil
}

// startLoad runs one load in the background; b.mu is held.
func (b *tagBuffer) startLoad() {
	b.loading, b.done = true, make(chan struct{})
	done := b.done
	if !b.c.goBG(func(ctx context.Context) { b.load(ctx, done) }) {
		b.loading, b.err = false, ErrClosed
		close(done)
	}
}

// load fetches one load of b.size IDs (one NextIDRanges call, or with an
// allocsvr too old for it, one NextIDs call per MaxCount IDs made
// concurrently; each retried over the endpoints like any call), keeps
// the IDs above every ID installed before, and installs them: as cur
// when cur's load is used up, else as next.
func (b *tagBuffer) load(bg context.Context, done chan struct{}) {
	ctx, cancel := context.WithTimeout(bg, b.c.cfg.timeout)
	defer cancel()
	for {
		b.mu.Lock()
		home := b.home
		b.mu.Unlock()
		rs, ep, err := b.c.fetchRanges(ctx, b.tag, b.size, home)
		b.mu.Lock()
		if err != nil {
			b.err, b.loading = err, false
			b.mu.Unlock()
			close(done)
			return
		}
		b.home = ep
		// An allocsvr's answers for a tag increase (this load's calls all
		// started after the last load's ended); another allocsvr's
		// segment may be behind the last one's: drop what is not above.
		rs = above(rs, b.high)
		if len(rs) == 0 {
			b.mu.Unlock()
			continue // that allocsvr moves on to a new segment, above
		}
		b.high = rs[len(rs)-1].last
		nb := newBatches(rs)
		if cur := b.cur.Load(); cur == nil || cur.used() && len(b.rest) == 0 {
			b.cur.Store(nb[0])
			b.rest = nb[1:]
		} else {
			b.next = nb
		}
		b.err, b.loading = nil, false
		b.mu.Unlock()
		close(done)
		return
	}
}

// Buffered is how many IDs of tag the local buffer holds now: the
// IDs a process exit would lose (0 without WithLocalBuffer).
func (c *Client) Buffered(tag string) int {
	b, ok := (*c.buffers.Load())[tag]
	if !ok {
		return 0
	}
	n := 0
	if cur := b.cur.Load(); cur != nil {
		n = cur.left()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, nb := range b.rest {
		n += nb.left()
	}
	for _, nb := range b.next {
		n += nb.left()
	}
	return n
}
