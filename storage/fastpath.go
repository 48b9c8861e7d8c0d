package storage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/hashicorp/raft"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/connectfast"
	"github.com/seqsvr/seqsvr/internal/h1"
)

// FastRoutes are the routes the HTTP/1.1 front (package h1) answers without
// net/http: a Connect-protocol unary ReserveSegment with the binary proto
// codec, on the leader (package connectfast; under load connect-go's
// per-call work was a fifth of the leader's CPU, pprof). The answer is the
// one the service gives: the same validation, the same propose, the same
// error codes. A follower, or a leader that lost leadership before
// proposing (ErrNotLeader), declines, and net/http's handlers forward the
// call.
func (s *Store) FastRoutes(maxBodyBytes int64, logger *slog.Logger) h1.Handler {
	var m h1.Mux
	m.Handle(seqsvrv1connect.StoreServiceReserveSegmentProcedure, connectfast.H1(maxBodyBytes, logger, s.reserveFast))
	return &m
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
		return nil, ConnectError(err)
	}
	out, err := proto.MarshalOptions{}.MarshalAppend(body[:0], seg)
	if err != nil {
		return nil, connect.NewError(connect.CodeInternal, fmt.Errorf("marshal message: %w", err))
	}
	return out, nil
}
