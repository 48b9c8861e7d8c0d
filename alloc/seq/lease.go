package seq

import (
	"context"
	"fmt"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// lease is this Node's membership lease as its own clock sees it. A new
// value is stored on every answered heartbeat; readers never lock.
type lease struct {
	// gen grows whenever the lease was not valid for a moment: memory
	// loaded under an older gen is never served again, since another
	// allocsvr may have served the section meanwhile.
	gen     uint64
	fenceAt time.Time // serve strictly before this (local, monotonic)
	fenceNs int64     // fenceAt as Node.monoNs counts, for fastNext
	ttl     time.Duration
}

func (l *lease) valid(now time.Time) bool { return now.Before(l.fenceAt) }

// fenceAfter is how long after sending an answered heartbeat this Node
// may serve. The store's lease starts no earlier than the send, so
// stopping margin before the TTL keeps it ahead of the store moving its
// sections.
func (n *Node) fenceAfter(ttl time.Duration) time.Duration {
	if d := ttl - n.cfg.FenceMargin; d > 0 {
		return d
	}
	return ttl / 2
}

func leaseTTL(res *seqsvrv1.SeqHeartbeatResponse) (time.Duration, error) {
	switch {
	case res.GetLeaseTtlMs() > 0:
		return time.Duration(res.GetLeaseTtlMs()) * time.Millisecond, nil
	case res.GetLeaseExpiresMs() > res.GetLeaderNowMs() && res.GetLeaderNowMs() > 0:
		return time.Duration(res.GetLeaseExpiresMs()-res.GetLeaderNowMs()) * time.Millisecond, nil
	}
	return 0, fmt.Errorf("%w: heartbeat answer without a lease", errs.Unavailable)
}

// beat sends one heartbeat and applies the answer. leaving ends the
// membership (Close); otherwise the spans the latest tables ask this Node
// to hand over are released with it.
func (n *Node) beat(ctx context.Context, leaving bool) error {
	req := &seqsvrv1.SeqHeartbeatRequest{
		NodeId: n.cfg.NodeID, InstanceId: n.instance, Url: n.cfg.URL, Leaving: leaving,
	}
	if !leaving {
		req.Released = n.releases()
	}
	sent := n.clock.Now()
	req.NowMs = sent.UnixMilli()
	res, err := n.store.SeqHeartbeat(ctx, req)
	if err == nil && !leaving {
		err = n.apply(sent, res, len(req.Released) > 0)
	}
	n.noteBeat(err)
	return err
}

// releases are the spans to hand over, from the latest tables.
func (n *Node) releases() []*seqsvrv1.SectionSpan {
	var out []*seqsvrv1.SectionSpan
	for _, t := range n.loadTables() {
		out = append(out, t.releases(n.cfg.NodeID)...)
	}
	return out
}

// apply installs an answered heartbeat: the new lease and tables, and
// drops the memory of every section this Node may no longer serve (moved,
// handover pending, or loaded under a lease that lapsed since). It asks
// the loop for another heartbeat at once when a handover is pending,
// unless this one released sections already (then the next tick does, so
// a store that keeps a handover pending cannot make it spin).
func (n *Node) apply(sent time.Time, res *seqsvrv1.SeqHeartbeatResponse, released bool) error {
	ttl, err := leaseTTL(res)
	if err != nil {
		return err
	}
	ts := newTables(res.GetTables())
	n.mu.Lock()
	old := n.lease.Load()
	l := &lease{gen: old.gen, fenceAt: sent.Add(n.fenceAfter(ttl)), ttl: ttl}
	l.fenceNs = int64(l.fenceAt.Sub(n.epoch))
	if !old.valid(n.clock.Now()) {
		l.gen++
	}
	for space, t := range ts {
		t.dir = n.dirLocked(space, t.sections())
	}
	for space := range n.dirs {
		if ts[space] == nil {
			delete(n.dirs, space)
		}
	}
	n.tables.Store(newTableSet(ts))
	n.lease.Store(l)
	for k, s := range n.sections {
		t := ts[k.space]
		if s.gen != l.gen || t == nil || !t.serves(n.cfg.NodeID, k.section) {
			n.dropLocked(k, s)
		}
	}
	n.mu.Unlock()
	if !released && len(n.releases()) > 0 {
		n.kickLoop()
	}
	return nil
}

// Takeover gives up every section and the lease at once and lets the
// next heartbeat register this Node again, as one new to the store: the
// store's cluster ID changed (restored from a backup or recovered after a
// quorum loss), so the owners it knew are void and its sections may go
// to other allocsvrs once its wait is over. Memory loaded before is never
// served again (the lease generation moves on), and each key continues
// above its section's jumped max_seq after a reload.
func (n *Node) Takeover(reason string) {
	n.mu.Lock()
	old := n.lease.Load()
	n.lease.Store(&lease{gen: old.gen + 1, ttl: old.ttl})
	for k, s := range n.sections {
		n.dropLocked(k, s)
	}
	n.mu.Unlock()
	n.noteBeat(fmt.Errorf("%w: %s; registering again", errs.Unavailable, reason))
	n.kickLoop()
}

// checkLapse drops every section's memory once the lease is no longer
// valid: it could only be served again after a reload anyway.
func (n *Node) checkLapse() {
	if n.lease.Load().valid(n.clock.Now()) {
		return
	}
	n.dropAll()
}

// loop renews the lease every HeartbeatInterval (at once when kicked)
// until ctx ends.
func (n *Node) loop(ctx context.Context) {
	defer close(n.loopDone)
	tick := time.NewTicker(n.cfg.HeartbeatInterval)
	defer tick.Stop()
	for {
		bctx, cancel := context.WithTimeout(ctx, n.beatTimeout())
		err := n.beat(bctx, false)
		cancel()
		if err != nil && ctx.Err() == nil {
			n.log.Debug("seq heartbeat failed", "err", err)
		}
		n.checkLapse()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-n.kick:
		}
	}
}

// beatTimeout bounds one heartbeat: HeartbeatTimeout, but at most half
// of what the lease leaves after a renewal (and at least an interval), so
// a store member that hangs (a paused leader) costs one short attempt and
// the next heartbeat, sent to another member, still renews in time. It
// bears on liveness only: the lease counts from each heartbeat's send.
func (n *Node) beatTimeout() time.Duration {
	d := n.cfg.HeartbeatTimeout
	if ttl := n.lease.Load().ttl; ttl > 0 {
		d = min(d, max(n.cfg.HeartbeatInterval, n.fenceAfter(ttl)/2))
	}
	return d
}

func (n *Node) kickLoop() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// noteBeat records a heartbeat's outcome for Status and logs changes.
func (n *Node) noteBeat(err error) {
	n.beatMu.Lock()
	defer n.beatMu.Unlock()
	if (err == nil) != (n.beatErr == nil) {
		if err != nil {
			n.log.Warn("seq heartbeats failing", "err", err)
		} else {
			n.log.Info("seq heartbeats answered again")
		}
	}
	n.beatErr = err
}

// monoNs is the time since n.epoch on n's clock: the monotonic reading
// alone (one vDSO call, where clock.Now reads the wall clock too) with the
// system clock, whose Now carries the same monotonic reading, so fenceNs
// and monoNs compare like fenceAt and Now. Other clocks (tests, the
// faults build's skewed clock) go through Now.
func (n *Node) monoNs() int64 {
	if n.sysClock {
		return int64(time.Since(n.epoch))
	}
	return int64(n.clock.Now().Sub(n.epoch))
}
