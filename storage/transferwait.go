package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// leaderPoll is how often a call held across a change of leader looks
// whether the change is over: a change by transfer takes a round trip or
// two, which a caller's backoff (tens of milliseconds, doubling) would
// otherwise round up to its next retry.
const leaderPoll = 2 * time.Millisecond

// electionTimeout is raft's, as it runs (the Config's may be zero: raft
// then applied its defaults).
func (s *Store) electionTimeout() time.Duration {
	return s.raft.ReloadableConfig().ElectionTimeout
}

// runLocal runs local across a graceful handover (Handover): a call
// that arrives during one waits for it to end, and one that raft refused
// because the transfer began (raft refuses the writes queued at that
// moment) runs once more after it. By then this member either still leads
// and serves the call, or answers ErrNotLeader and route forwards it to
// the new leader. The retry sends the same request, as the caller's own
// retry would, so a request_id still holds.
func runLocal[Req, Resp any](ctx context.Context, s *Store, local localCall[Req, Resp], req *Req) (*Resp, error) {
	s.awaitTransfer(ctx)
	resp, err := local(ctx, req)
	if err != nil && ctx.Err() == nil && errs.Judge(errs.StoreCall, err).Retry && !errors.Is(err, ErrNotLeader) && s.handingOver() {
		s.awaitTransfer(ctx)
		return local(ctx, req)
	}
	return resp, err
}

// handingOver reports whether this member is transferring leadership on
// a graceful stop. A transfer for a refusing data dir (handOffLeadership)
// is not one: this member refuses writes anyway, and another member may
// take them at once.
func (s *Store) handingOver() bool {
	return s.handingOff.Load() && s.disk.check() == nil
}

// awaitTransfer holds the caller while this member hands leadership over,
// until the transfer has ended or this member no longer leads, for at
// most two election timeouts (raft's own bound on a transfer).
func (s *Store) awaitTransfer(ctx context.Context) {
	if !s.handingOver() {
		return
	}
	s.pollUntil(ctx, 2*s.electionTimeout(), func() bool {
		return !s.handingOff.Load() || s.raft.State() != raft.Leader
	})
}

// awaitLeader waits, up to one election timeout, until a leader other
// than was ("": any) is known, for a call this member must pass on: an
// election, or the last round trip of a transfer, leaves none known for a
// moment. self is true when this member leads; otherwise c calls the
// leader. err is why none was found.
func (s *Store) awaitLeader(ctx context.Context, was raft.ServerID) (c seqsvrv1connect.StoreServiceClient, id raft.ServerID, self bool, err error) {
	found := func() bool {
		_, id = s.raft.LeaderWithID()
		switch {
		case id == "" || id == was:
			err = fmt.Errorf("%w: no leader is known to %s; retry", ErrNoLeader, s.cfg.NodeID)
			return false
		case string(id) == s.cfg.NodeID:
			self = s.raft.State() == raft.Leader
			err = fmt.Errorf("%w: leadership is changing; retry", errs.Unavailable)
			return self
		}
		c, id, err = s.leaderClientID()
		return err == nil
	}
	if s.pollUntil(ctx, s.electionTimeout(), found) {
		return c, id, self, nil
	}
	if ctx.Err() != nil {
		err = fmt.Errorf("%w: %v", errs.Unavailable, ctx.Err())
	}
	return nil, "", false, err
}

// pollUntil checks done every leaderPoll until it holds, bound has
// passed, ctx ends or the store closes, and reports whether it held.
func (s *Store) pollUntil(ctx context.Context, bound time.Duration, done func() bool) bool {
	if done() {
		return true
	}
	tick := time.NewTicker(leaderPoll)
	defer tick.Stop()
	limit := time.NewTimer(bound)
	defer limit.Stop()
	for {
		select {
		case <-tick.C:
			if done() {
				return true
			}
		case <-limit.C:
			return done()
		case <-ctx.Done():
			return false
		case <-s.stop:
			return false
		}
	}
}
