package storage

import (
	"context"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// Probe phases (MemberProbeResponse.phase).
const (
	phaseWaiting = "waiting"
	phaseRunning = "running"
)

// MemberProbe is answered by the member asked, never forwarded: a member
// without Raft state asks each listed peer what it holds.
func (h *service) MemberProbe(ctx context.Context, req *connect.Request[seqsvrv1.MemberProbeRequest]) (*connect.Response[seqsvrv1.MemberProbeResponse], error) {
	return connect.NewResponse(h.s.probe()), nil
}

// probe is what this running member knows of its cluster. A cluster
// exists once its log holds anything beyond the bootstrap configuration
// (index 1; a first leader appends at once) or its state holds data (a
// restored one, whose log starts after a snapshot). A member whose only
// state is its bootstrap configuration has acknowledged nothing: members
// starting beside it on empty data dirs may still bootstrap, whichever
// of them started first.
func (s *Store) probe() *seqsvrv1.MemberProbeResponse {
	out := &seqsvrv1.MemberProbeResponse{
		NodeId:        s.cfg.NodeID,
		Phase:         phaseRunning,
		ClusterExists: s.fsm.HoldsData() || s.raft.LastIndex() > 1,
		ClusterId:     s.fsm.ClusterID(),
		LastIndex:     s.raft.LastIndex(),
		CommitIndex:   s.raft.CommitIndex(),
		AppliedIndex:  s.raft.AppliedIndex(),
	}
	// The configuration and leader as ClusterStatus shows them.
	if st, err := s.status(); err == nil {
		out.LeaderId, out.LeaderHttpAddr, out.Members = st.GetLeaderId(), st.GetLeaderHttpAddr(), st.GetMembers()
	}
	return out
}
