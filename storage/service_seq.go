package storage

import (
	"context"
	"fmt"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
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
	if err := validateCreateSpace(r); err != nil {
		return nil, err
	}
	res, err := s.propose(ctx, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_CreateSpace{CreateSpace: &seqsvrv1.CreateSpaceCommand{
		Space: r.GetSpace(), KeyCount: r.GetKeyCount(), SectionSize: r.GetSectionSize(), Step: r.GetStep(), Description: r.GetDescription()}}})
	if err != nil {
		return nil, err
	}
	return res.space, nil
}

func (s *Store) seqHeartbeat(ctx context.Context, r *seqsvrv1.SeqHeartbeatRequest) (*seqsvrv1.SeqHeartbeatResponse, error) {
	if err := validateSeqHeartbeat(r); err != nil {
		return nil, err
	}
	res, err := s.propose(ctx, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_SeqHeartbeat{SeqHeartbeat: &seqsvrv1.SeqHeartbeatCommand{
		NodeId: r.GetNodeId(), InstanceId: r.GetInstanceId(), Url: r.GetUrl(), Leaving: r.GetLeaving(), Released: r.GetReleased(),
		LeaseTtlMs: s.cfg.SeqLeaseTTL.Milliseconds()}}})
	if err != nil {
		return nil, err
	}
	return res.heartbeat, nil
}

func (s *Store) raiseSections(ctx context.Context, r *seqsvrv1.RaiseSectionsRequest) (*seqsvrv1.RaiseSectionsResponse, error) {
	if err := validateRaiseSections(r); err != nil {
		return nil, err
	}
	res, err := s.propose(ctx, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_RaiseSections{RaiseSections: &seqsvrv1.RaiseSectionsCommand{
		NodeId: r.GetNodeId(), InstanceId: r.GetInstanceId(), Space: r.GetSpace(), Sections: r.GetSections()}}})
	if err != nil {
		return nil, err
	}
	return res.raise, nil
}

func (s *Store) getSpace(ctx context.Context, r *seqsvrv1.GetSpaceRequest) (*seqsvrv1.Space, error) {
	var out *seqsvrv1.Space
	err := s.readSpace(ctx, r.GetSpace(), func(_ *fsmState, sp *space) { out = sp.api() })
	return out, err
}

func (s *Store) getRouting(ctx context.Context, r *seqsvrv1.GetRoutingRequest) (*seqsvrv1.RoutingTable, error) {
	var out *seqsvrv1.RoutingTable
	err := s.readSpace(ctx, r.GetSpace(), func(st *fsmState, sp *space) { out = st.table(sp) })
	return out, err
}

// readSpace is a linearizable read of one space: fn runs under the FSM's
// read lock.
func (s *Store) readSpace(ctx context.Context, name string, fn func(*fsmState, *space)) error {
	if err := spec.CheckTag(name); err != nil {
		return err
	}
	if err := s.linearize(ctx); err != nil {
		return err
	}
	found := false
	s.fsm.read(func(st *fsmState) {
		if sp, ok := st.spaces[name]; ok {
			found = true
			fn(st, sp)
		}
	})
	if !found {
		return fmt.Errorf("%w: space %q", errs.NotFound, name)
	}
	return nil
}

func (s *Store) listSpaces(ctx context.Context, r *seqsvrv1.ListSpacesRequest) (*seqsvrv1.ListSpacesResponse, error) {
	size, after, err := pageParams(r.GetPageSize(), r.GetPageToken())
	if err != nil {
		return nil, err
	}
	if err := s.linearize(ctx); err != nil {
		return nil, err
	}
	out := &seqsvrv1.ListSpacesResponse{}
	s.fsm.read(func(st *fsmState) {
		var names []string
		names, out.NextPageToken = page(st.spaces, size, after)
		for _, name := range names {
			out.Spaces = append(out.Spaces, st.spaces[name].api())
		}
	})
	return out, nil
}
