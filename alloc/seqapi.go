package alloc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/seqsvr/seqsvr/alloc/seq"
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/h1"
	"github.com/seqsvr/seqsvr/internal/routes"
)

// SeqSource is what the service needs from per-key sequences (*seq.Node in
// production): the one-key calls of the Leaf-style GETs (NextSeqHere for
// the front's) and Status. SeqService itself, with its front route, is
// package seq's (Node.Routes).
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
// with errors as the segment Leaf GET answers them. The front answers a
// next of a key this allocsvr serves; it declines one another allocsvr
// serves (NextSeqHere: seq.ErrNotOwner, nothing taken), and net/http's
// route forwards it.
func (s *Service) seqRoutes() []routes.Route {
	route := func(c seqCall) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			v, err := s.leafSeq(r.Context(), r.PathValue("space"), r.PathValue("key"), c)
			status, body := leafSeqResponse(v, err, nil)
			writeLeaf(w, status, body)
		})
	}
	return []routes.Route{
		{Pattern: "GET /api/seq/next/{space}/{key}", Handler: route(seqNext), Fast: s.leafSeqNextH1,
			Gated: []any{s.leafSeqNextH1, s.leafSeq, leafSeqResponse, writeLeaf, (*seq.Node).NextSeq, (*seq.Node).NextSeqHere}},
		{Pattern: "GET /api/seq/current/{space}/{key}", Handler: route(seqCurrent),
			Gated: []any{s.leafSeq, leafSeqResponse, writeLeaf, (*seq.Node).CurrentSeq}},
	}
}

// leafSeqNextH1 is GET /api/seq/next/{space}/{key} on the front; rest is
// "{space}/{key}".
func (s *Service) leafSeqNextH1(req *h1.Request, rest []byte, resp *h1.Response) bool {
	i := bytes.IndexByte(rest, '/')
	v, err := s.leafSeq(req.Context, string(rest[:i]), string(rest[i+1:]), seqNextHere)
	if errors.Is(err, seq.ErrNotOwner) {
		return false
	}
	setLeafHeaders(resp.SetHeader)
	resp.Status, resp.Body = leafSeqResponse(v, err, resp.Buf[:0])
	return true
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
