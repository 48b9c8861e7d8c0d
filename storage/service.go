package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"connectrpc.com/connect"
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// service implements seqsvrv1connect.StoreServiceHandler on a Store.
type service struct {
	s *Store
}

// Service returns the Connect handler implementation, with leader
// forwarding. Routes registers it, procedure by procedure.
func (s *Store) Service() seqsvrv1connect.StoreServiceHandler { return &service{s: s} }

type client = seqsvrv1connect.StoreServiceClient

func (h *service) CreateTag(ctx context.Context, req *connect.Request[seqsvrv1.CreateTagRequest]) (*connect.Response[seqsvrv1.Tag], error) {
	return serve(ctx, h.s, req, h.s.createTag, client.CreateTag)
}

func (h *service) GetTag(ctx context.Context, req *connect.Request[seqsvrv1.GetTagRequest]) (*connect.Response[seqsvrv1.Tag], error) {
	if req.Msg.GetLocal() {
		// Never forwarded: the point is to see this member's own state.
		t, err := h.s.getTagLocal(req.Msg)
		if err != nil {
			return nil, errs.Connect(err)
		}
		return connect.NewResponse(t), nil
	}
	return serve(ctx, h.s, req, h.s.getTag, client.GetTag)
}

func (h *service) ListTags(ctx context.Context, req *connect.Request[seqsvrv1.ListTagsRequest]) (*connect.Response[seqsvrv1.ListTagsResponse], error) {
	return serve(ctx, h.s, req, h.s.listTags, client.ListTags)
}

func (h *service) UpdateTag(ctx context.Context, req *connect.Request[seqsvrv1.UpdateTagRequest]) (*connect.Response[seqsvrv1.Tag], error) {
	return serve(ctx, h.s, req, h.s.updateTag, client.UpdateTag)
}

func (h *service) DeleteTag(ctx context.Context, req *connect.Request[seqsvrv1.DeleteTagRequest]) (*connect.Response[seqsvrv1.DeleteTagResponse], error) {
	return serve(ctx, h.s, req, h.s.deleteTag, client.DeleteTag)
}

func (h *service) ReserveSegment(ctx context.Context, req *connect.Request[seqsvrv1.ReserveSegmentRequest]) (*connect.Response[seqsvrv1.Segment], error) {
	return serve(ctx, h.s, req, h.s.reserveSegment, client.ReserveSegment)
}

func (h *service) RegisterWorker(ctx context.Context, req *connect.Request[seqsvrv1.RegisterWorkerRequest]) (*connect.Response[seqsvrv1.Worker], error) {
	return serve(ctx, h.s, req, h.s.registerWorker, client.RegisterWorker)
}

func (h *service) RenewWorker(ctx context.Context, req *connect.Request[seqsvrv1.RenewWorkerRequest]) (*connect.Response[seqsvrv1.Worker], error) {
	return serve(ctx, h.s, req, h.s.renewWorker, client.RenewWorker)
}

// ClusterStatus is answered by the member asked, never forwarded: it is
// how clients find the leader.
func (h *service) ClusterStatus(ctx context.Context, _ *connect.Request[seqsvrv1.ClusterStatusRequest]) (*connect.Response[seqsvrv1.ClusterStatusResponse], error) {
	st, err := h.s.status()
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(st), nil
}

func (h *service) AddMember(ctx context.Context, req *connect.Request[seqsvrv1.AddMemberRequest]) (*connect.Response[seqsvrv1.ClusterStatusResponse], error) {
	return serve(ctx, h.s, req, h.s.addMember, client.AddMember)
}

func (h *service) RemoveMember(ctx context.Context, req *connect.Request[seqsvrv1.RemoveMemberRequest]) (*connect.Response[seqsvrv1.ClusterStatusResponse], error) {
	return serve(ctx, h.s, req, h.s.removeMember, client.RemoveMember)
}

// Local implementations: each returns ErrNotLeader when the caller should
// forward.

func (s *Store) createTag(ctx context.Context, r *seqsvrv1.CreateTagRequest) (*seqsvrv1.Tag, error) {
	res, err := s.propose(ctx, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_CreateTag{CreateTag: &seqsvrv1.CreateTagCommand{
		Tag: r.GetTag(), Start: r.GetStart(), Step: r.GetStep(), Description: r.GetDescription()}}})
	if err != nil {
		return nil, err
	}
	return fsm.APITag(res.Tag), nil
}

func (s *Store) getTag(ctx context.Context, r *seqsvrv1.GetTagRequest) (*seqsvrv1.Tag, error) {
	if err := spec.CheckTag(r.GetTag()); err != nil {
		return nil, err
	}
	if err := s.linearize(ctx); err != nil {
		return nil, err
	}
	return s.getTagLocal(r)
}

// getTagLocal answers from this member's applied state without checking
// leadership: a follower may lag and a deposed leader may be stale, so the
// answer is not linearizable. It is for diagnostics and for comparing
// members once the cluster has quiesced.
func (s *Store) getTagLocal(r *seqsvrv1.GetTagRequest) (*seqsvrv1.Tag, error) {
	if err := spec.CheckTag(r.GetTag()); err != nil {
		return nil, err
	}
	t := s.fsm.Tag(r.GetTag())
	if t == nil {
		return nil, fmt.Errorf("%w: tag %q", errs.NotFound, r.GetTag())
	}
	return t, nil
}

func (s *Store) listTags(ctx context.Context, r *seqsvrv1.ListTagsRequest) (*seqsvrv1.ListTagsResponse, error) {
	out := &seqsvrv1.ListTagsResponse{}
	var err error
	out.Tags, out.NextPageToken, err = listPage(ctx, s, r.GetPageSize(), r.GetPageToken(), s.fsm.ListTags)
	return out, err
}

// listPage is a linearizable read of one page of entries, in name order,
// by read (the FSM's ListTags or ListSpaces).
func listPage[Out any](ctx context.Context, s *Store, pageSize int32, token string,
	read func(size int, after string) ([]Out, string)) ([]Out, string, error) {
	size, after, err := fsm.PageParams(pageSize, token)
	if err != nil {
		return nil, "", err
	}
	if err := s.linearizeRead(ctx); err != nil {
		return nil, "", err
	}
	out, next := read(size, after)
	return out, next, nil
}

func (s *Store) updateTag(ctx context.Context, r *seqsvrv1.UpdateTagRequest) (*seqsvrv1.Tag, error) {
	res, err := s.propose(ctx, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_UpdateTag{UpdateTag: &seqsvrv1.UpdateTagCommand{
		Tag: r.GetTag(), Step: r.GetStep(), Description: r.Description}}})
	if err != nil {
		return nil, err
	}
	return fsm.APITag(res.Tag), nil
}

func (s *Store) deleteTag(ctx context.Context, r *seqsvrv1.DeleteTagRequest) (*seqsvrv1.DeleteTagResponse, error) {
	if _, err := s.propose(ctx, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_DeleteTag{DeleteTag: &seqsvrv1.DeleteTagCommand{Tag: r.GetTag()}}}); err != nil {
		return nil, err
	}
	return &seqsvrv1.DeleteTagResponse{}, nil
}

func (s *Store) reserveSegment(ctx context.Context, r *seqsvrv1.ReserveSegmentRequest) (*seqsvrv1.Segment, error) {
	if err := s.checkCallerCluster(r.GetClusterId()); err != nil {
		return nil, err
	}
	cmd := &seqsvrv1.Command{Cmd: &seqsvrv1.Command_ReserveSegment{ReserveSegment: &seqsvrv1.ReserveSegmentCommand{
		Tag: r.GetTag(), Size: r.GetSize(), RequestId: r.GetRequestId(), RecordLimit: int64(s.cfg.RequestRecordLimit)}}}
	// Checked here too, as propose would: the planted bug below answers
	// without proposing.
	if err := s.checkCommand(cmd); err != nil {
		return nil, err
	}
	plantedUngatedNewField(cmd.GetReserveSegment())
	if seg, ok := s.plantedReserveBeforeCommit(cmd); ok {
		return seg, nil
	}
	res, err := s.propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	return &seqsvrv1.Segment{Tag: res.Seg.GetTag(), First: res.Seg.GetFirst(), Last: res.Seg.GetLast(), Step: res.Tag.GetStep()}, nil
}

func (s *Store) registerWorker(ctx context.Context, r *seqsvrv1.RegisterWorkerRequest) (*seqsvrv1.Worker, error) {
	if err := s.checkCallerCluster(r.GetClusterId()); err != nil {
		return nil, err
	}
	instance := r.GetInstanceId()
	if instance == "" {
		// The leader names the instance so the caller can renew with it.
		var b [8]byte
		_, _ = rand.Read(b[:])
		instance = "auto-" + hex.EncodeToString(b[:])
	}
	res, err := s.propose(ctx, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_RegisterWorker{RegisterWorker: &seqsvrv1.RegisterWorkerCommand{
		NodeId: r.GetNodeId(), NowMs: r.GetNowMs(), InstanceId: instance,
		LeaseTtlMs: s.cfg.WorkerLeaseTTL.Milliseconds(), RetentionMs: s.cfg.WorkerRetention.Milliseconds()}}})
	if err != nil {
		return nil, err
	}
	return apiWorker(res.Worker), nil
}

func (s *Store) renewWorker(ctx context.Context, r *seqsvrv1.RenewWorkerRequest) (*seqsvrv1.Worker, error) {
	if err := s.checkCallerCluster(r.GetClusterId()); err != nil {
		return nil, err
	}
	res, err := s.propose(ctx, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_RenewWorker{RenewWorker: &seqsvrv1.RenewWorkerCommand{
		NodeId: r.GetNodeId(), WorkerId: r.GetWorkerId(), NowMs: r.GetNowMs(), InstanceId: r.GetInstanceId(),
		LeaseTtlMs: s.cfg.WorkerLeaseTTL.Milliseconds()}}})
	if err != nil {
		return nil, err
	}
	return apiWorker(res.Worker), nil
}

func apiWorker(w *fsm.WorkerAnswer) *seqsvrv1.Worker {
	return &seqsvrv1.Worker{NodeId: w.State.GetNodeId(), WorkerId: w.State.GetWorkerId(), LastTimestampMs: w.State.GetLastTimestampMs(),
		LeaseExpiresMs: w.State.GetLeaseExpiresMs(), InstanceId: w.State.GetInstanceId(), Layout: w.Layout,
		LeaderNowMs: w.LeaderNowMs, LeaseTtlMs: w.LeaseTTLMs}
}
