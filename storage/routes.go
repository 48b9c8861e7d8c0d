package storage

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/connectfast"
	"github.com/seqsvr/seqsvr/internal/routes"
)

// Routes is StoreService as the store serves it, each procedure once: its
// connect-go handler (Service, which forwards to the leader) and, for the
// hot call, ReserveSegment, the HTTP/1.1 front's route on the leader.
// Under load connect-go's per-call work was a fifth of the leader's CPU
// (pprof), and at high concurrency the leader is CPU-bound.
//
// The front's answer is the service's: the same validation, the same
// propose, the same error codes. A follower declines before proposing
// anything, and the connection goes to net/http, whose handler forwards
// the call to the leader.
func (s *Store) Routes() routes.Table {
	svc := s.Service()
	return routes.Table{Procedures: []routes.Procedure{
		routes.Unary(seqsvrv1connect.StoreServiceCreateTagProcedure, svc.CreateTag),
		routes.Unary(seqsvrv1connect.StoreServiceGetTagProcedure, svc.GetTag),
		routes.Unary(seqsvrv1connect.StoreServiceListTagsProcedure, svc.ListTags),
		routes.Unary(seqsvrv1connect.StoreServiceUpdateTagProcedure, svc.UpdateTag),
		routes.Unary(seqsvrv1connect.StoreServiceDeleteTagProcedure, svc.DeleteTag),
		routes.Unary(seqsvrv1connect.StoreServiceReserveSegmentProcedure, svc.ReserveSegment).WithFast(s.reserveFast),
		routes.Unary(seqsvrv1connect.StoreServiceRegisterWorkerProcedure, svc.RegisterWorker),
		routes.Unary(seqsvrv1connect.StoreServiceRenewWorkerProcedure, svc.RenewWorker),
		routes.Unary(seqsvrv1connect.StoreServiceClusterStatusProcedure, svc.ClusterStatus),
		routes.Unary(seqsvrv1connect.StoreServiceAddMemberProcedure, svc.AddMember),
		routes.Unary(seqsvrv1connect.StoreServiceRemoveMemberProcedure, svc.RemoveMember),
		routes.Unary(seqsvrv1connect.StoreServiceMemberProbeProcedure, svc.MemberProbe),
		routes.Unary(seqsvrv1connect.StoreServiceCreateSpaceProcedure, svc.CreateSpace),
		routes.Unary(seqsvrv1connect.StoreServiceGetSpaceProcedure, svc.GetSpace),
		routes.Unary(seqsvrv1connect.StoreServiceListSpacesProcedure, svc.ListSpaces),
		routes.Unary(seqsvrv1connect.StoreServiceGetRoutingProcedure, svc.GetRouting),
		routes.Unary(seqsvrv1connect.StoreServiceSeqHeartbeatProcedure, svc.SeqHeartbeat),
		routes.Unary(seqsvrv1connect.StoreServiceRaiseSectionsProcedure, svc.RaiseSections),
		routes.ServerStream(seqsvrv1connect.StoreServiceBackupProcedure, svc.Backup),
	}}
}

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
