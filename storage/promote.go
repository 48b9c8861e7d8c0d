package storage

import (
	"context"
	"errors"
	"slices"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// promoteInterval is how often the leader looks for non-voters to promote.
const promoteInterval = 200 * time.Millisecond

// promoteLoop is the leader's job of turning caught-up non-voters into
// voters. AddMember (and a member coming back without its state) adds
// non-voters only: a voter that has not caught up would count toward a
// quorum without holding what it acknowledges, and a new member would
// lower the cluster's tolerance until it has copied the log. Whichever
// member leads runs it, so a promotion outlives a change of leader.
func (s *Store) promoteLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(promoteInterval)
	defer tick.Stop()
	var mark uint64 // this leader's commit index one tick ago; 0: not leading then
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		if s.raft.State() != raft.Leader {
			mark = 0
			continue
		}
		if mark != 0 {
			s.promoteCaughtUp(mark)
		}
		mark = s.raft.CommitIndex()
	}
}

// promoteCaughtUp promotes each non-voter whose applied index has reached
// mark, the commit index this leader had one tick (promoteInterval) ago:
// raft does not expose a follower's progress, so the member is asked
// (MemberProbe). Under a steady write load a follower always trails the
// commit index of the very moment by a few entries; one that holds
// everything committed a tick ago is within far less than an election
// timeout of the leader, the Raft dissertation's test of a caught-up
// server. (Promotion timing is no matter of safety: a voter's log may
// trail; only a voter that forgot what it acknowledged is unsafe.) raft
// v1.7.3's GetConfiguration reports no index to make AddVoter conditional
// on, so the membership changes of this leader (AddMember, RemoveMember,
// this promotion) take turns (memberMu), and the promotion checks again,
// in its turn, that the member is still a non-voter at that address: a
// member removed meanwhile is never added back.
func (s *Store) promoteCaughtUp(mark uint64) {
	cf := s.raft.GetConfiguration()
	if cf.Error() != nil {
		return
	}
	for _, srv := range cf.Configuration().Servers {
		if srv.Suffrage != raft.Nonvoter {
			continue
		}
		id := string(srv.ID)
		addr := s.httpAddrOf(id)
		if addr == "" {
			continue // its HTTP address is recorded right after it is added
		}
		ctx, cancel := context.WithTimeout(s.stopCtx, time.Second)
		res, err := s.client(addr).MemberProbe(ctx, connect.NewRequest(&seqsvrv1.MemberProbeRequest{FromId: s.cfg.NodeID}))
		cancel()
		if err != nil {
			s.log.Debug("non-voter did not answer; not promoted yet", "id", id, "http_addr", addr, "err", err)
			continue
		}
		if res.Msg.GetPhase() != phaseRunning || res.Msg.GetNodeId() != id || res.Msg.GetAppliedIndex() < mark {
			continue
		}
		if err := s.promote(srv); err != nil {
			s.log.Warn("promoting a caught-up non-voter failed; will retry", "id", id, "err", err)
			return
		}
		s.log.Info("promoted a caught-up non-voter to voter", "id", id, "applied_index", res.Msg.GetAppliedIndex(), "leader_commit_index_a_tick_ago", mark)
		return // the configuration changed: look again next tick
	}
}

// promote makes srv a voter if it is still the non-voter it was.
func (s *Store) promote(srv raft.Server) error {
	s.memberMu.Lock()
	defer s.memberMu.Unlock()
	cf := s.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return err
	}
	if !slices.Contains(cf.Configuration().Servers, srv) {
		return errors.New("the member changed before its promotion")
	}
	return s.await(s.raft.AddVoter(srv.ID, srv.Address, 0, time.Second))
}
