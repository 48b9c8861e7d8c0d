package storage

import (
	"context"
	"fmt"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// heldLive reports whether the process holding held, the entry of r's
// ID, still runs. At another address than r's, anything accepting there
// is that holder. At r's own address a member that lost its state is
// asking to be taken back, and its Raft transport listens while it waits
// (discover), so a dial always succeeds: ask the process there instead.
// It is the asker when it answers as a member of that ID waiting to
// learn its cluster; a member running Raft there is the holder. An
// unanswered probe decides nothing: the asker retries.
func (s *Store) heldLive(ctx context.Context, held raft.Server, r *seqsvrv1.AddMemberRequest) (bool, error) {
	if string(held.Address) != r.GetRaftAddr() {
		return raftAddrLive(ctx, held.Address), nil
	}
	if !raftAddrLive(ctx, held.Address) {
		return false, nil
	}
	addr := s.httpAddrOf(string(held.ID))
	if addr == "" {
		addr = r.GetHttpAddr()
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	res, err := s.client(addr).MemberProbe(pctx, connect.NewRequest(&seqsvrv1.MemberProbeRequest{FromId: s.cfg.NodeID}))
	if err != nil {
		return false, fmt.Errorf("%w: cannot tell whether %s at %s still runs: %v", errs.Unavailable, held.ID, addr, err)
	}
	waiting := res.Msg.GetPhase() == phaseWaiting && res.Msg.GetNodeId() == string(held.ID)
	return !waiting, nil
}
