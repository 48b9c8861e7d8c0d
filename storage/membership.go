package storage

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// addMember adds id at raftAddr as a non-voter and records its HTTP
// address; the leader promotes it once it has caught up (promoteLoop). It
// is idempotent: a member already present at the same address is only
// (re)recorded. With replace (the caller holds no Raft state), an entry of
// its ID is stale: that identity acknowledged entries the caller no longer
// holds, so it is removed first and the caller added back as a non-voter,
// which neither counts toward a quorum nor, until it has caught up,
// votes (voteGate).
func (s *Store) addMember(ctx context.Context, r *seqsvrv1.AddMemberRequest) (*seqsvrv1.ClusterStatusResponse, error) {
	setMember := &seqsvrv1.Command{Cmd: &seqsvrv1.Command_SetMember{SetMember: &seqsvrv1.SetMemberCommand{Id: r.GetId(), RaftAddr: r.GetRaftAddr(), HttpAddr: r.GetHttpAddr()}}}
	// Checked before the configuration changes, not only when proposed.
	if err := s.checkCommand(setMember); err != nil {
		return nil, err
	}
	if s.raft.State() != raft.Leader {
		return nil, ErrNotLeader
	}
	s.memberMu.Lock()
	defer s.memberMu.Unlock()
	if err := s.checkJoinerCluster(ctx, r); err != nil {
		return nil, err
	}
	cf := s.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return nil, mapRaftErr(err)
	}
	var held *raft.Server // the entry of r's ID, at any address
	for _, srv := range cf.Configuration().Servers {
		switch {
		case string(srv.ID) == r.GetId():
			held = &srv
		case string(srv.Address) == r.GetRaftAddr():
			return nil, fmt.Errorf("%w: Raft address %s is used by member %s; remove it first", errs.InvalidArgument, r.GetRaftAddr(), srv.ID)
		}
	}
	// Replacing or moving an entry is right for a member that lost its
	// state or restarted elsewhere, and a hijack of a live one (two
	// processes with one Raft ID): a holder still running at the entry's
	// address (heldLive) refuses it.
	moved := held != nil && string(held.Address) != r.GetRaftAddr()
	if moved || held != nil && r.GetReplace() {
		live, err := s.heldLive(ctx, *held, r)
		if err != nil {
			return nil, err
		}
		if live {
			return nil, fmt.Errorf("%w: %s at Raft address %s (asked for %s); stop that process and RemoveMember %s first, or give this one its own --node-id",
				ErrMemberHeld, r.GetId(), held.Address, r.GetRaftAddr(), r.GetId())
		}
	}
	switch {
	case held != nil && (moved || r.GetReplace()):
		s.log.Warn("member comes back without its raft state, or at a new address: removing its old entry, then adding it as a non-voter",
			"id", r.GetId(), "old_raft_addr", held.Address, "raft_addr", r.GetRaftAddr(), "old_suffrage", held.Suffrage, "replace", r.GetReplace())
		if err := s.await(s.raft.RemoveServer(held.ID, 0, timeoutFrom(ctx))); err != nil {
			return nil, mapRaftErr(err)
		}
		if err := s.await(s.raft.AddNonvoter(raft.ServerID(r.GetId()), raft.ServerAddress(r.GetRaftAddr()), 0, timeoutFrom(ctx))); err != nil {
			return nil, mapRaftErr(err)
		}
		s.log.Info("member re-added as a non-voter", "id", r.GetId(), "raft_addr", r.GetRaftAddr(), "http_addr", r.GetHttpAddr())
	case held == nil:
		if err := s.await(s.raft.AddNonvoter(raft.ServerID(r.GetId()), raft.ServerAddress(r.GetRaftAddr()), 0, timeoutFrom(ctx))); err != nil {
			return nil, mapRaftErr(err)
		}
		s.log.Info("added member as a non-voter", "id", r.GetId(), "raft_addr", r.GetRaftAddr(), "http_addr", r.GetHttpAddr())
	}
	if m := s.fsm.Member(r.GetId()); m == nil || m.GetHttpAddr() != r.GetHttpAddr() || m.GetRaftAddr() != r.GetRaftAddr() {
		if _, err := s.propose(ctx, setMember); err != nil {
			return nil, err
		}
	}
	return s.status()
}

// removeMember forgets the member's HTTP address, then removes it from the
// Raft configuration (in this order so a leader removing itself still
// commits the first step). Removing an absent member succeeds.
func (s *Store) removeMember(ctx context.Context, r *seqsvrv1.RemoveMemberRequest) (*seqsvrv1.ClusterStatusResponse, error) {
	cmd := &seqsvrv1.Command{Cmd: &seqsvrv1.Command_RemoveMember{RemoveMember: &seqsvrv1.RemoveMemberCommand{Id: r.GetId()}}}
	if err := s.checkCommand(cmd); err != nil {
		return nil, err
	}
	if s.raft.State() != raft.Leader {
		return nil, ErrNotLeader
	}
	s.memberMu.Lock()
	defer s.memberMu.Unlock()
	if s.fsm.Member(r.GetId()) != nil {
		if _, err := s.propose(ctx, cmd); err != nil {
			return nil, err
		}
	}
	cf := s.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return nil, mapRaftErr(err)
	}
	for _, srv := range cf.Configuration().Servers {
		if string(srv.ID) == r.GetId() {
			if err := s.raft.RemoveServer(srv.ID, 0, timeoutFrom(ctx)).Error(); err != nil {
				return nil, mapRaftErr(err)
			}
			s.log.Info("removed member", "id", r.GetId())
		}
	}
	return s.status()
}

// status describes the cluster as this member sees it.
func (s *Store) status() (*seqsvrv1.ClusterStatusResponse, error) {
	cf := s.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return nil, mapRaftErr(err)
	}
	_, leader := s.raft.LeaderWithID()
	out := &seqsvrv1.ClusterStatusResponse{
		LeaderId:     string(leader),
		Term:         s.raft.CurrentTerm(),
		CommitIndex:  s.raft.CommitIndex(),
		AppliedIndex: s.raft.AppliedIndex(),
		NodeId:       s.cfg.NodeID,
		NowMs:        s.cfg.Clock.Now().UnixMilli(),
		ClusterId:    s.fsm.ClusterID(),
		Generation:   s.fsm.Generation(),
	}
	if leader != "" {
		out.LeaderHttpAddr = s.httpAddrOf(string(leader))
	}
	for _, srv := range cf.Configuration().Servers {
		id := string(srv.ID)
		state := "unknown"
		switch {
		case id == s.cfg.NodeID:
			// raft's names, lowercased as the contract spells them.
			state = strings.ToLower(s.raft.State().String())
		case srv.ID == leader:
			state = "leader"
		case leader != "":
			state = "follower"
		}
		out.Members = append(out.Members, &seqsvrv1.Member{
			Id: id, RaftAddr: string(srv.Address), HttpAddr: s.httpAddrOf(id),
			Suffrage: strings.ToLower(srv.Suffrage.String()), State: state,
		})
	}
	s.fillVersions(out)
	return out, nil
}

// raftAddrLive reports whether something accepts TCP connections at addr
// within a second. Raft's transport takes a connection closed before any
// byte as a quiet EOF.
func raftAddrLive(ctx context.Context, addr raft.ServerAddress) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", string(addr))
	if err != nil {
		return false
	}
	c.Close()
	return true
}

func (s *Store) inConfiguration() bool {
	cf := s.raft.GetConfiguration()
	if cf.Error() != nil {
		return false
	}
	for _, srv := range cf.Configuration().Servers {
		if string(srv.ID) == s.cfg.NodeID {
			return true
		}
	}
	return false
}
