package storage

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// handoverProbeShare is the part of an election timeout the voters get to
// answer how far they have applied: a voter slower than that is a poor
// new leader anyway.
const handoverProbeShare = 2

// HandoverBound is the longest Handover takes with election timeout et: the
// probe of the voters, then hashicorp/raft's own bound on a transfer (one
// election timeout to catch the target up, one for it to win), then a
// little for the new leader's first heartbeat to name it here.
func HandoverBound(et time.Duration) time.Duration {
	return et/handoverProbeShare + 2*et + et/2
}

// Handover hands leadership to the most caught-up other voter when this
// member leads, and returns once another member leads (or the bound, or
// ctx, ran out). A graceful stop calls it before the server stops
// accepting: a leader that just closed costs the cluster a heartbeat
// timeout and an election, while a transfer costs a round trip, and calls
// that reach this member meanwhile are forwarded to the new leader.
//
// Raft picks a target by its replication state alone, which may be a
// voter that is down; so the voters are asked for their applied index
// first, and the transfer goes to the furthest one that answered
// (raft's own pick when none did).
func (s *Store) Handover(ctx context.Context) {
	if s.raft.State() != raft.Leader || !s.hasOtherVoter() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, HandoverBound(s.electionTimeout()))
	defer cancel()
	start, term := time.Now(), s.raft.CurrentTerm()
	// Observed before the transfer starts, so the new leader's
	// first heartbeat cannot slip past.
	obs := make(chan raft.Observation, 8)
	o := raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		_, ok := o.Data.(raft.LeaderObservation)
		return ok
	})
	s.raft.RegisterObserver(o)
	defer s.raft.DeregisterObserver(o)

	if !s.handingOff.CompareAndSwap(false, true) {
		// The disk guard is transferring already; wait for it.
		s.log.Info("stopping: a leadership transfer is already running; waiting for it")
	} else {
		defer s.handingOff.Store(false)
		target := s.furthestVoter(ctx)
		var f raft.Future
		if target != nil {
			s.log.Info("stopping: handing leadership over", "to", target.ID, "applied_index", target.applied, "term", term)
			f = s.raft.LeadershipTransferToServer(target.ID, target.Address)
		} else {
			s.log.Info("stopping: handing leadership over to raft's pick (no voter answered its status)", "term", term)
			f = s.raft.LeadershipTransfer()
		}
		if err := s.awaitCtx(ctx, f); err != nil {
			s.log.Warn("leadership transfer failed; stopping as leader", "err", err, "took", time.Since(start).Round(time.Millisecond).String())
			return
		}
	}
	if id, ok := s.awaitOtherLeader(ctx, obs); ok {
		s.log.Info("leadership handed over", "leader", id, "term", s.raft.CurrentTerm(), "took", time.Since(start).Round(time.Millisecond).String())
		return
	}
	s.log.Warn("no other leader known before the handover's bound; stopping", "state", s.raft.State().String(), "took", time.Since(start).Round(time.Millisecond).String())
}

// hasOtherVoter reports whether leadership has anywhere to go: a
// one-member cluster just stops.
func (s *Store) hasOtherVoter() bool {
	cf := s.raft.GetConfiguration()
	if cf.Error() != nil {
		return false
	}
	for _, srv := range cf.Configuration().Servers {
		if srv.Suffrage == raft.Voter && string(srv.ID) != s.cfg.NodeID {
			return true
		}
	}
	return false
}

// awaitCtx is await bounded by ctx as well.
func (s *Store) awaitCtx(ctx context.Context, f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- s.await(f) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// awaitOtherLeader waits until a member other than this one is known to
// lead, so that calls reaching this member before it stops accepting are
// forwarded rather than refused.
func (s *Store) awaitOtherLeader(ctx context.Context, obs <-chan raft.Observation) (raft.ServerID, bool) {
	self := raft.ServerID(s.cfg.NodeID)
	for {
		if _, id := s.raft.LeaderWithID(); id != "" && id != self {
			return id, true
		}
		select {
		case <-obs:
		case <-ctx.Done():
			return "", false
		case <-s.stop:
			return "", false
		}
	}
}

// candidate is a voter that answered Handover's probe.
type candidate struct {
	raft.Server
	applied uint64
}

// furthestVoter asks every other voter, at once, for its status, and
// returns the one that has applied the most (nil when none answered in
// time). A voter that names another leader is skipped: it is not
// following this one.
func (s *Store) furthestVoter(ctx context.Context) *candidate {
	cf := s.raft.GetConfiguration()
	if cf.Error() != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.electionTimeout()/handoverProbeShare)
	defer cancel()
	var (
		mu  sync.Mutex
		got []candidate
		wg  sync.WaitGroup
	)
	for _, srv := range cf.Configuration().Servers {
		addr := s.httpAddrOf(string(srv.ID))
		if srv.Suffrage != raft.Voter || string(srv.ID) == s.cfg.NodeID || addr == "" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.client(addr).ClusterStatus(ctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
			if err != nil {
				s.log.Debug("handover: voter did not answer its status", "id", srv.ID, "err", err)
				return
			}
			if l := res.Msg.GetLeaderId(); l != "" && l != s.cfg.NodeID {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			got = append(got, candidate{Server: srv, applied: res.Msg.GetAppliedIndex()})
		}()
	}
	wg.Wait()
	if len(got) == 0 {
		return nil
	}
	best := slices.MaxFunc(got, func(a, b candidate) int {
		return cmp.Or(cmp.Compare(a.applied, b.applied), -cmp.Compare(a.ID, b.ID))
	})
	return &best
}
