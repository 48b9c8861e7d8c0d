package storage

import (
	"context"
	"strings"

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
// exists once anything beyond the bootstrap configuration was applied:
// with the ID committed before any other command (propose), a member
// whose only state is the configuration has acknowledged nothing, so
// members that lost their disks at the very start may still bootstrap
// beside it.
func (s *Store) probe() *seqsvrv1.MemberProbeResponse {
	out := &seqsvrv1.MemberProbeResponse{
		NodeId:        s.cfg.NodeID,
		Phase:         phaseRunning,
		ClusterExists: s.fsm.HoldsData(),
		ClusterId:     s.fsm.ClusterID(),
		LastIndex:     s.raft.LastIndex(),
		CommitIndex:   s.raft.CommitIndex(),
		AppliedIndex:  s.raft.AppliedIndex(),
	}
	if _, leader := s.raft.LeaderWithID(); leader != "" {
		out.LeaderId = string(leader)
		out.LeaderHttpAddr = s.httpAddrOf(string(leader))
	}
	if cf := s.raft.GetConfiguration(); cf.Error() == nil {
		for _, srv := range cf.Configuration().Servers {
			id := string(srv.ID)
			out.Members = append(out.Members, &seqsvrv1.Member{
				Id: id, RaftAddr: string(srv.Address), HttpAddr: s.httpAddrOf(id),
				Suffrage: strings.ToLower(srv.Suffrage.String()),
			})
		}
	}
	return out
}
