package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// leaderLoop does a new leader's chores once per term: apply a barrier so
// reads see every earlier entry, and record members' HTTP addresses.
func (s *Store) leaderLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var doneTerm uint64
	for {
		select {
		case <-s.stop:
			return
		case <-s.raft.LeaderCh():
		case <-tick.C:
		}
		if s.raft.State() != raft.Leader {
			continue
		}
		term := s.raft.CurrentTerm()
		if term == doneTerm {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := s.onLeader(ctx)
		cancel()
		if err != nil {
			s.log.Warn("leader setup failed; will retry", "term", term, "err", err)
			continue
		}
		s.log.Info("leader ready", "term", term)
		doneTerm = term
	}
}

func (s *Store) onLeader(ctx context.Context) error {
	if err := s.ensureBarrier(ctx); err != nil {
		return err
	}
	if err := s.ensureClusterID(ctx); err != nil {
		return err
	}
	want := []Peer{{ID: s.cfg.NodeID, RaftAddr: s.cfg.RaftAddr, HTTPAddr: s.cfg.HTTPAddr}}
	for _, p := range s.cfg.Peers {
		if p.ID != s.cfg.NodeID {
			want = append(want, p)
		}
	}
	for i, p := range want {
		m := s.fsm.Member(p.ID)
		// Our own address we know best; for other bootstrap peers, an entry
		// already present may be newer (AddMember), so only fill gaps.
		if m != nil && (i > 0 || m.GetHttpAddr() == p.HTTPAddr && m.GetRaftAddr() == p.RaftAddr) {
			continue
		}
		cmd := &seqsvrv1.Command{Cmd: &seqsvrv1.Command_SetMember{SetMember: &seqsvrv1.SetMemberCommand{Id: p.ID, RaftAddr: p.RaftAddr, HttpAddr: p.HTTPAddr}}}
		if _, err := s.propose(ctx, cmd); err != nil {
			return fmt.Errorf("record member %s: %w", p.ID, err)
		}
	}
	return nil
}

// ensureBarrier makes sure this leader has applied every entry from earlier
// terms before it serves a read: once per term, as etcd and Consul learned.
func (s *Store) ensureBarrier(ctx context.Context) error {
	term := s.raft.CurrentTerm()
	if s.barrierTerm.Load() == term {
		return nil
	}
	s.barrierMu.Lock()
	defer s.barrierMu.Unlock()
	if s.barrierTerm.Load() == term {
		return nil
	}
	if err := s.await(s.raft.Barrier(timeoutFrom(ctx))); err != nil {
		return mapRaftErr(err)
	}
	// A barrier that succeeded ran in term or later; storing the older term
	// only costs a second barrier.
	s.barrierTerm.Store(term)
	return nil
}

// linearizeRead is linearize for ListTags, ListSpaces, GetSpace and
// GetRouting; the planted local-reads skips it (faults builds only).
func (s *Store) linearizeRead(ctx context.Context) error {
	if plantedLocalReads() {
		return nil
	}
	return s.linearize(ctx)
}

// linearize lets a read be served from the local FSM: this member is the
// leader, has applied its term's barrier and still holds a quorum.
func (s *Store) linearize(ctx context.Context) error {
	if plantedStaleReads() {
		return nil
	}
	if s.raft.State() != raft.Leader {
		return ErrNotLeader
	}
	if err := s.ensureBarrier(ctx); err != nil {
		return err
	}
	if err := s.raft.VerifyLeader().Error(); err != nil {
		return mapRaftErr(err)
	}
	return nil
}
