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
// production): the Leaf-style GETs and Status. SeqService itself is served
// by the source's own handler.
type SeqSource interface {
	Next(ctx context.Context, space string, keys []uint64, forwarded bool) ([]int64, uint64, error)
	Current(ctx context.Context, space string, keys []uint64, forwarded bool) ([]int64, uint64, error)
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
	route := func(next bool) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seqs, err := s.leafSeq(r, next)
			status, body := leafResponse(seqs, err, nil)
			writeLeaf(w, status, body)
		})
	}
	return map[string]http.Handler{
		"GET /api/seq/next/{space}/{key}":    route(true),
		"GET /api/seq/current/{space}/{key}": route(false),
	}
}

// leafSeq serves one per-key GET: the next value of the key in the path,
// or its current value.
func (s *Service) leafSeq(r *http.Request, next bool) ([]int64, error) {
	if s.seq == nil {
		return nil, fmt.Errorf("%w: %s", errs.Unavailable, seqDisabled)
	}
	key, err := strconv.ParseUint(r.PathValue("key"), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: key %q is not a decimal uint64", errs.InvalidArgument, r.PathValue("key"))
	}
	call := s.seq.Current
	if next {
		call = s.seq.Next
	}
	seqs, _, err := call(r.Context(), r.PathValue("space"), []uint64{key}, false)
	return seqs, err
}
