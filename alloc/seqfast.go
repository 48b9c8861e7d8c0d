package alloc

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/seqsvr/seqsvr/alloc/seq"
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/connectfast"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/h1"
)

// The per-key calls the HTTP/1.1 front answers (FastRoutes): the Connect
// binary unary SeqService NextSeq and GET /api/seq/next/{space}/{key}, when
// this allocsvr serves the key's section. Forwarding stays with net/http
// and the SeqService handler: a key of another allocsvr's section, and a
// call marked forwarded, are declined before anything is taken, and
// net/http answers them as it did before the front took these routes.

const leafSeqNextPrefix = "/api/seq/next/"

// unforwarded declines a call carrying seq.ForwardedHeader, whatever its
// value: the SeqService handler through net/http decides what it means.
func unforwarded(h h1.Handler) h1.Handler {
	return h1.HandlerFunc(func(req *h1.Request, resp *h1.Response) bool {
		if _, n := req.Header(seq.ForwardedHeader); n != 0 {
			return false
		}
		return h.ServeH1(req, resp)
	})
}

// nextSeqFast is SeqService.NextSeq for connectfast: the answer the
// SeqService handler gives, or a fall-through to it when there is no
// SeqService here or the key is another allocsvr's.
func (s *Service) nextSeqFast(ctx context.Context, body []byte) ([]byte, error) {
	src := s.seq
	if src == nil {
		return nil, connectfast.ErrFallThrough // --seq=false: net/http has no such route
	}
	var req seqsvrv1.NextSeqRequest
	if err := connectfast.Decode(body, &req); err != nil {
		return nil, err
	}
	v, version, err := src.NextSeqHere(ctx, req.GetSpace(), req.GetKey())
	if errors.Is(err, seq.ErrNotOwner) {
		return nil, connectfast.ErrFallThrough // nothing taken; the handler forwards it
	}
	if err != nil {
		return nil, errs.Connect(err)
	}
	return appendNextSeq(body[:0], v, version), nil
}

// appendNextSeq is NextSeqResponse{Seq: v, RoutingVersion: version} in the
// proto wire format as proto.Marshal writes it: fields in order, a zero
// value left out.
func appendNextSeq(b []byte, v int64, version uint64) []byte {
	if v != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(v))
	}
	if version != 0 {
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, version)
	}
	return b
}

// leafSeqNextH1 is GET /api/seq/next/{space}/{key} for the front, under the
// rules of leafSegmentH1: two segments of unreserved characters, else
// net/http's mux (which decodes and cleans paths) answers. A key another
// allocsvr serves is declined too: net/http's route forwards it.
func (s *Service) leafSeqNextH1(req *h1.Request, resp *h1.Response) bool {
	if string(req.Method) != http.MethodGet || len(req.Body) != 0 {
		return false
	}
	rest := req.Path[len(leafSeqNextPrefix):]
	i := 0
	for i < len(rest) && rest[i] != '/' {
		i++
	}
	if i == len(rest) || !unreservedSegment(rest[:i]) || !unreservedSegment(rest[i+1:]) {
		return false
	}
	v, err := s.leafSeq(req.Context, string(rest[:i]), string(rest[i+1:]), seqNextHere)
	if errors.Is(err, seq.ErrNotOwner) {
		return false
	}
	setLeafHeaders(resp.SetHeader)
	resp.Status, resp.Body = leafSeqResponse(v, err, resp.Buf[:0])
	return true
}
