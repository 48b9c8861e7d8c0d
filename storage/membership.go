package storage

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// addMember makes id a voter at raftAddr and records its HTTP address. It is
// idempotent: a member already present at the same address is only
// (re)recorded.
func (s *Store) addMember(ctx context.Context, r *seqsvrv1.AddMemberRequest) (*seqsvrv1.ClusterStatusResponse, error) {
	if err := fsm.ValidateMember(r.GetId(), r.GetRaftAddr(), r.GetHttpAddr()); err != nil {
		return nil, err
	}
	if s.raft.State() != raft.Leader {
		return nil, ErrNotLeader
	}
	if err := s.checkJoinerCluster(ctx, r); err != nil {
		return nil, err
	}
	cf := s.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return nil, mapRaftErr(err)
	}
	present := false
	var movedFrom raft.ServerAddress
	for _, srv := range cf.Configuration().Servers {
		switch {
		case string(srv.ID) == r.GetId() && string(srv.Address) == r.GetRaftAddr():
			present = srv.Suffrage == raft.Voter
		case string(srv.ID) == r.GetId():
			movedFrom = srv.Address
		case string(srv.Address) == r.GetRaftAddr():
			return nil, fmt.Errorf("%w: Raft address %s is used by member %s; remove it first", errs.InvalidArgument, r.GetRaftAddr(), srv.ID)
		}
	}
	// AddVoter would move the ID to the new address: right for a member
	// that restarted elsewhere, a hijack of a live one (two processes
	// with one Raft ID). Something still accepting at the old address
	// means the holder lives.
	if movedFrom != "" && raftAddrLive(ctx, movedFrom) {
		return nil, fmt.Errorf("%w: %s at Raft address %s (asked for %s); stop that process and RemoveMember %s first, or give this one its own --node-id",
			ErrMemberHeld, r.GetId(), movedFrom, r.GetRaftAddr(), r.GetId())
	}
	if movedFrom != "" {
		s.log.Warn("member moves to a new Raft address; nothing answers at the old one", "id", r.GetId(), "from", movedFrom, "to", r.GetRaftAddr())
	}
	if !present {
		if err := s.raft.AddVoter(raft.ServerID(r.GetId()), raft.ServerAddress(r.GetRaftAddr()), 0, timeoutFrom(ctx)).Error(); err != nil {
			return nil, mapRaftErr(err)
		}
		s.log.Info("added member", "id", r.GetId(), "raft_addr", r.GetRaftAddr(), "http_addr", r.GetHttpAddr())
	}
	if m := s.fsm.Member(r.GetId()); m == nil || m.GetHttpAddr() != r.GetHttpAddr() || m.GetRaftAddr() != r.GetRaftAddr() {
		cmd := &seqsvrv1.Command{Cmd: &seqsvrv1.Command_SetMember{SetMember: &seqsvrv1.SetMemberCommand{Id: r.GetId(), RaftAddr: r.GetRaftAddr(), HttpAddr: r.GetHttpAddr()}}}
		if _, err := s.propose(ctx, cmd); err != nil {
			return nil, err
		}
	}
	return s.status()
}

// removeMember forgets the member's HTTP address, then removes it from the
// Raft configuration (in this order so a leader removing itself still
// commits the first step). Removing an absent member succeeds.
func (s *Store) removeMember(ctx context.Context, r *seqsvrv1.RemoveMemberRequest) (*seqsvrv1.ClusterStatusResponse, error) {
	if err := fsm.ValidateKey("id", r.GetId(), true); err != nil {
		return nil, err
	}
	if s.raft.State() != raft.Leader {
		return nil, ErrNotLeader
	}
	if s.fsm.Member(r.GetId()) != nil {
		cmd := &seqsvrv1.Command{Cmd: &seqsvrv1.Command_RemoveMember{RemoveMember: &seqsvrv1.RemoveMemberCommand{Id: r.GetId()}}}
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

// joinLoop asks the member at cfg.Join to add this one (the call follows
// forwarding to the leader), with backoff, until it succeeds or this member
// already sees itself in the configuration.
func (s *Store) joinLoop() {
	defer s.wg.Done()
	backoff := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		if s.inConfiguration() {
			return
		}
		// Derived from stopCtx: Close must not wait for a slow join call.
		ctx, cancel := context.WithTimeout(s.stopCtx, 10*time.Second)
		res, err := s.client(s.cfg.Join).AddMember(ctx, connect.NewRequest(&seqsvrv1.AddMemberRequest{
			Id: s.cfg.NodeID, RaftAddr: s.cfg.RaftAddr, HttpAddr: s.cfg.HTTPAddr, ClusterId: s.fsm.ClusterID()}))
		cancel()
		if err == nil {
			if own, theirs := s.fsm.ClusterID(), res.Msg.GetClusterId(); own != "" && theirs != "" && own != theirs {
				err = fmt.Errorf("%w: this member belongs to cluster %s, the cluster at %s is %s", ErrOtherCluster, own, s.cfg.Join, theirs)
				s.log.Error("joined a member of another cluster; exiting", "err", err)
				if s.cfg.Fatal != nil {
					s.cfg.Fatal(err)
				}
				return
			}
			s.log.Info("joined cluster", "through", s.cfg.Join, "attempts", attempt)
			return
		}
		if connect.CodeOf(err) == connect.CodeFailedPrecondition && s.cfg.Fatal != nil {
			// Another live process is this member: joining again cannot
			// help, and serving under its ID must not happen.
			s.log.Error("join refused: this --node-id belongs to a live member; exiting", "node_id", s.cfg.NodeID, "through", s.cfg.Join, "err", err)
			s.cfg.Fatal(fmt.Errorf("join %s: %w", s.cfg.Join, err))
			return
		}
		s.log.Warn("join failed; retrying", "through", s.cfg.Join, "attempt", attempt, "err", err, "backoff", backoff)
		select {
		case <-s.stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
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
