package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// NewClusterID is a fresh random cluster ID (16 hex digits), generated
// outside Apply: the command carries it.
func NewClusterID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ensureClusterID has each new leader propose the cluster ID once (in a
// Noop, which a binary predating it ignores): a fresh random one for a
// cluster bootstrapped without one (a new one, or one written by an older
// release), else the one it holds, so a member that missed it (upgraded
// from a snapshot an older binary wrote) learns it. The FSM keeps the
// first ID applied, so two leaders racing still agree.
func (s *Store) ensureClusterID(ctx context.Context) error {
	id, fresh := s.fsm.ClusterID(), false
	if id == "" {
		id, fresh = NewClusterID(), true
	}
	cmd := &seqsvrv1.Command{Cmd: &seqsvrv1.Command_Noop{Noop: &seqsvrv1.NoopCommand{ClusterId: id}}}
	if _, err := s.propose(ctx, cmd); err != nil {
		return fmt.Errorf("record the cluster ID: %w", err)
	}
	if fresh {
		s.log.Info("cluster ID recorded", "cluster_id", s.fsm.ClusterID())
	}
	return nil
}

// checkJoinerCluster refuses an AddMember from a member of another
// cluster: one that says so in the request, or whose own ClusterStatus
// (asked at its HTTP address, best effort: a fresh member may not answer
// yet) names another cluster ID. Adding it would mix two clusters' logs.
func (s *Store) checkJoinerCluster(ctx context.Context, r *seqsvrv1.AddMemberRequest) error {
	own := s.fsm.ClusterID()
	if own == "" {
		return nil
	}
	theirs := r.GetClusterId()
	if theirs == "" && r.GetHttpAddr() != "" {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		res, err := s.client(r.GetHttpAddr()).ClusterStatus(pctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
		cancel()
		if err == nil {
			theirs = res.Msg.GetClusterId()
		} else {
			s.log.Info("could not ask the joining member for its cluster ID; adding it", "id", r.GetId(), "http_addr", r.GetHttpAddr(), "err", err)
		}
	}
	if theirs != "" && theirs != own {
		return fmt.Errorf("%w: member %s (%s) belongs to cluster %s, this cluster is %s: give it an empty data dir to join",
			ErrOtherCluster, r.GetId(), r.GetHttpAddr(), theirs, own)
	}
	return nil
}
