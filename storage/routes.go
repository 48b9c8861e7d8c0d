package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/connectfast"
	"github.com/seqsvr/seqsvr/internal/routes"
)

// Routes is StoreService as the store serves it, each procedure once: its
// connect-go handler (Service, which forwards to the leader), the least
// role a token needs to call it, for the hot call, ReserveSegment, the
// HTTP/1.1 front's route on the leader, and for ReserveSegment and the
// reads clients and allocsvrs make, the functions the fault harness must
// reach (Gated: a stale read after a leader change, a page token that
// skips or repeats tags, a routing version going backwards would
// otherwise pass every scenario). Routes only binds, never calls, so a
// nil Store gives the declarations (the coverage gate lists them).
// Under load connect-go's per-call work was a fifth of the leader's CPU
// (pprof), and at high concurrency the leader is CPU-bound.
//
// The front's answer is the service's: the same validation, the same
// propose, the same error codes. A follower declines before proposing
// anything, and the connection goes to net/http, whose handler forwards
// the call to the leader.
func (s *Store) Routes() routes.Table {
	svc := &service{s: s}
	return routes.Table{Procedures: []routes.Procedure{
		routes.Unary(seqsvrv1connect.StoreServiceCreateTagProcedure, auth.Admin, svc.CreateTag),
		routes.Unary(seqsvrv1connect.StoreServiceGetTagProcedure, auth.Client, svc.GetTag).Gated((*Store).getTag),
		routes.Unary(seqsvrv1connect.StoreServiceListTagsProcedure, auth.Client, svc.ListTags).Gated((*Store).listTags, listPage[*seqsvrv1.Tag]),
		routes.Unary(seqsvrv1connect.StoreServiceUpdateTagProcedure, auth.Admin, svc.UpdateTag),
		routes.Unary(seqsvrv1connect.StoreServiceDeleteTagProcedure, auth.Admin, svc.DeleteTag),
		routes.Unary(seqsvrv1connect.StoreServiceReserveSegmentProcedure, auth.Alloc, svc.ReserveSegment).WithFast(s.reserveFast).Gated(),
		routes.Unary(seqsvrv1connect.StoreServiceRegisterWorkerProcedure, auth.Alloc, svc.RegisterWorker),
		routes.Unary(seqsvrv1connect.StoreServiceRenewWorkerProcedure, auth.Alloc, svc.RenewWorker),
		routes.Unary(seqsvrv1connect.StoreServiceClusterStatusProcedure, auth.Client, svc.ClusterStatus).Gated(),
		routes.Unary(seqsvrv1connect.StoreServiceAddMemberProcedure, auth.Admin, svc.AddMember),
		routes.Unary(seqsvrv1connect.StoreServiceRemoveMemberProcedure, auth.Admin, svc.RemoveMember),
		routes.Unary(seqsvrv1connect.StoreServiceMemberProbeProcedure, memberProbeRole, svc.MemberProbe),
		routes.Unary(seqsvrv1connect.StoreServiceCreateSpaceProcedure, auth.Admin, svc.CreateSpace),
		routes.Unary(seqsvrv1connect.StoreServiceGetSpaceProcedure, auth.Client, svc.GetSpace).Gated((*Store).getSpace, readSpace[*seqsvrv1.Space]),
		routes.Unary(seqsvrv1connect.StoreServiceListSpacesProcedure, auth.Client, svc.ListSpaces).Gated((*Store).listSpaces),
		routes.Unary(seqsvrv1connect.StoreServiceGetRoutingProcedure, auth.Alloc, svc.GetRouting).Gated((*Store).getRouting),
		routes.Unary(seqsvrv1connect.StoreServiceSeqHeartbeatProcedure, auth.Alloc, svc.SeqHeartbeat),
		routes.Unary(seqsvrv1connect.StoreServiceRaiseSectionsProcedure, auth.Alloc, svc.RaiseSections),
		routes.ServerStream(seqsvrv1connect.StoreServiceBackupProcedure, auth.Admin, svc.Backup),
	}}
}

// memberProbeRole is MemberProbe's role, here and in the table a member
// serves while it waits to start Raft (waitingService).
const memberProbeRole = auth.Client

func (s *Store) reserveFast(ctx context.Context, body []byte) ([]byte, error) {
	if s.raft.State() != raft.Leader {
		// connect-go decodes, validates and forwards it anyway.
		return nil, connectfast.ErrFallThrough
	}
	var req seqsvrv1.ReserveSegmentRequest
	if err := connectfast.Decode(body, &req); err != nil {
		return nil, err
	}
	seg, err := s.reserveSegment(ctx, &req)
	if errors.Is(err, ErrNotLeader) {
		// Nothing was proposed: let the service forward it.
		return nil, connectfast.ErrFallThrough
	}
	if err != nil {
		return nil, err
	}
	out, err := proto.MarshalOptions{}.MarshalAppend(body[:0], seg)
	if err != nil {
		return nil, fmt.Errorf("storage: marshal segment: %w", err)
	}
	return out, nil
}
