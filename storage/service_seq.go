package storage

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// The per-key sequence RPCs. CreateSpace, SeqHeartbeat and RaiseSections
// are writes (proposed on the leader, forwarded there from a follower);
// GetSpace, ListSpaces and GetRouting are linearizable reads like GetTag.

func (h *service) CreateSpace(ctx context.Context, req *connect.Request[seqsvrv1.CreateSpaceRequest]) (*connect.Response[seqsvrv1.Space], error) {
	return serve(ctx, h.s, req, h.s.createSpace, client.CreateSpace)
}

func (h *service) GetSpace(ctx context.Context, req *connect.Request[seqsvrv1.GetSpaceRequest]) (*connect.Response[seqsvrv1.Space], error) {
	return serve(ctx, h.s, req, h.s.getSpace, client.GetSpace)
}

func (h *service) ListSpaces(ctx context.Context, req *connect.Request[seqsvrv1.ListSpacesRequest]) (*connect.Response[seqsvrv1.ListSpacesResponse], error) {
	return serve(ctx, h.s, req, h.s.listSpaces, client.ListSpaces)
}

func (h *service) GetRouting(ctx context.Context, req *connect.Request[seqsvrv1.GetRoutingRequest]) (*connect.Response[seqsvrv1.RoutingTable], error) {
	return serve(ctx, h.s, req, h.s.getRouting, client.GetRouting)
}

func (h *service) SeqHeartbeat(ctx context.Context, req *connect.Request[seqsvrv1.SeqHeartbeatRequest]) (*connect.Response[seqsvrv1.SeqHeartbeatResponse], error) {
	return serve(ctx, h.s, req, h.s.seqHeartbeat, client.SeqHeartbeat)
}

func (h *service) RaiseSections(ctx context.Context, req *connect.Request[seqsvrv1.RaiseSectionsRequest]) (*connect.Response[seqsvrv1.RaiseSectionsResponse], error) {
	return serve(ctx, h.s, req, h.s.raiseSections, client.RaiseSections)
}

func (s *Store) createSpace(ctx context.Context, r *seqsvrv1.CreateSpaceRequest) (*seqsvrv1.Space, error) {
	res, err := s.propose(ctx, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_CreateSpace{CreateSpace: &seqsvrv1.CreateSpaceCommand{
		Space: r.GetSpace(), KeyCount: r.GetKeyCount(), SectionSize: r.GetSectionSize(), Step: r.GetStep(), Description: r.GetDescription()}}})
	return res.Space, err
}

// seqHeartbeat carries this member's lease TTL in the command, so every
// member applies the same lease whatever its own flag says.
func (s *Store) seqHeartbeat(ctx context.Context, r *seqsvrv1.SeqHeartbeatRequest) (*seqsvrv1.SeqHeartbeatResponse, error) {
	res, err := s.proposeChecked(ctx, s.checkCallerCluster(r.GetClusterId()), &seqsvrv1.Command{Cmd: &seqsvrv1.Command_SeqHeartbeat{SeqHeartbeat: &seqsvrv1.SeqHeartbeatCommand{
		NodeId: r.GetNodeId(), InstanceId: r.GetInstanceId(), Url: r.GetUrl(), Leaving: r.GetLeaving(), Released: r.GetReleased(),
		LeaseTtlMs: s.cfg.SeqLeaseTTL.Milliseconds()}}})
	return res.Heartbeat, err
}

func (s *Store) raiseSections(ctx context.Context, r *seqsvrv1.RaiseSectionsRequest) (*seqsvrv1.RaiseSectionsResponse, error) {
	res, err := s.proposeChecked(ctx, s.checkCallerCluster(r.GetClusterId()), &seqsvrv1.Command{Cmd: &seqsvrv1.Command_RaiseSections{RaiseSections: &seqsvrv1.RaiseSectionsCommand{
		NodeId: r.GetNodeId(), InstanceId: r.GetInstanceId(), Space: r.GetSpace(), Sections: r.GetSections()}}})
	return res.Raise, err
}

// proposeChecked proposes cmd unless the request failed a check of its
// own (checkErr), which is then the answer.
func (s *Store) proposeChecked(ctx context.Context, checkErr error, cmd *seqsvrv1.Command) (fsm.Result, error) {
	if checkErr != nil {
		return fsm.Result{}, checkErr
	}
	return s.propose(ctx, cmd)
}

func (s *Store) getSpace(ctx context.Context, r *seqsvrv1.GetSpaceRequest) (*seqsvrv1.Space, error) {
	return readSpace(ctx, s, r.GetSpace(), s.fsm.Space)
}

func (s *Store) getRouting(ctx context.Context, r *seqsvrv1.GetRoutingRequest) (*seqsvrv1.RoutingTable, error) {
	return readSpace(ctx, s, r.GetSpace(), s.fsm.Routing)
}

// readSpace is a linearizable read of one space by read (the FSM's Space
// or Routing).
func readSpace[Out any](ctx context.Context, s *Store, name string, read func(string) (Out, bool)) (Out, error) {
	var zero Out
	if err := spec.CheckTag(name); err != nil {
		return zero, err
	}
	if err := s.linearizeRead(ctx); err != nil {
		return zero, err
	}
	out, ok := read(name)
	if !ok {
		return zero, fmt.Errorf("%w: space %q", errs.NotFound, name)
	}
	return out, nil
}

func (s *Store) listSpaces(ctx context.Context, r *seqsvrv1.ListSpacesRequest) (*seqsvrv1.ListSpacesResponse, error) {
	out := &seqsvrv1.ListSpacesResponse{}
	var err error
	out.Spaces, out.NextPageToken, err = listPage(ctx, s, r.GetPageSize(), r.GetPageToken(), s.fsm.ListSpaces)
	return out, err
}
