package alloc

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// SeqSource is what the service needs from per-key sequences (*seq.Node in
// production): the one-key calls of the Leaf-style GETs and of the HTTP/1.1
// front's NextSeq, and Status. SeqService itself is served by the source's
// own handler; the front answers its NextSeq only when NextSeqHere can.
type SeqSource interface {
	NextSeq(ctx context.Context, space string, key uint64, forwarded bool) (int64, uint64, error)
	CurrentSeq(ctx context.Context, space string, key uint64, forwarded bool) (int64, uint64, error)
	// NextSeqHere is NextSeq without forwarding: seq.ErrNotOwner, nothing
	// taken, when another allocsvr serves the key.
	NextSeqHere(ctx context.Context, space string, key uint64) (int64, uint64, error)
	Status() *seqsvrv1.SeqStatus
}

// seqDisabled is the reason given while no SeqSource is set.
const seqDisabled = "per-key sequences disabled (--seq=false)"

// SetSeq makes per-key sequences available to the Leaf GETs and Status.
// Call it before serving.
func (s *Service) SetSeq(src SeqSource) { s.seq = src }

func (s *Service) seqStatus() *seqsvrv1.SeqStatus {
	if s.seq == nil {
		return &seqsvrv1.SeqStatus{Reason: seqDisabled}
	}
	return s.seq.Status()
}

// seqRoutes are the Leaf-style per-key GETs:
//
//	GET /api/seq/next/{space}/{key}     -> the key's next value, plain decimal
//	GET /api/seq/current/{space}/{key}  -> its current value, plain decimal
//
// with errors as the segment Leaf GET answers them.
func (s *Service) seqRoutes() map[string]http.Handler {
	route := func(c seqCall) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			v, err := s.leafSeq(r.Context(), r.PathValue("space"), r.PathValue("key"), c)
			status, body := leafSeqResponse(v, err, nil)
			writeLeaf(w, status, body)
		})
	}
	return map[string]http.Handler{
		"GET /api/seq/next/{space}/{key}":    route(seqNext),
		"GET /api/seq/current/{space}/{key}": route(seqCurrent),
	}
}

// seqCall is the call a per-key GET makes.
type seqCall int

const (
	seqNext     seqCall = iota // NextSeq
	seqCurrent                 // CurrentSeq
	seqNextHere                // NextSeqHere: the front's, which never forwards
)

// leafSeq serves one per-key GET, for net/http and the front alike: the
// next value of key (its decimal text, as in the path) or its current
// value.
func (s *Service) leafSeq(ctx context.Context, space, key string, c seqCall) (int64, error) {
	if s.seq == nil {
		return 0, fmt.Errorf("%w: %s", errs.Unavailable, seqDisabled)
	}
	k, err := strconv.ParseUint(key, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: key %q is not a decimal uint64", errs.InvalidArgument, key)
	}
	var v int64
	switch c {
	case seqNext:
		v, _, err = s.seq.NextSeq(ctx, space, k, false)
	case seqCurrent:
		v, _, err = s.seq.CurrentSeq(ctx, space, k, false)
	default:
		v, _, err = s.seq.NextSeqHere(ctx, space, k)
	}
	return v, err
}

// leafSeqResponse is leafResponse for one value.
func leafSeqResponse(v int64, err error, buf []byte) (int, []byte) {
	if err != nil {
		return leafResponse(nil, err, buf)
	}
	ids := [1]int64{v}
	return leafResponse(ids[:], nil, buf)
}
