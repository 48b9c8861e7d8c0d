package seq

import (
	"context"
	"net/http"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// Handler serves a Node as seqsvr.v1.SeqService.
type Handler struct{ n *Node }

var _ seqsvrv1connect.SeqServiceHandler = Handler{}

// Handler is the Connect handler of n.
func (n *Node) Handler() Handler { return Handler{n: n} }

func forwarded(h http.Header) bool { return h.Get(ForwardedHeader) == "1" }

// NextSeq hands out one key's next value.
func (h Handler) NextSeq(ctx context.Context, req *connect.Request[seqsvrv1.NextSeqRequest]) (*connect.Response[seqsvrv1.NextSeqResponse], error) {
	seqs, v, err := h.n.Next(ctx, req.Msg.GetSpace(), []uint64{req.Msg.GetKey()}, forwarded(req.Header()))
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(&seqsvrv1.NextSeqResponse{Seq: seqs[0], RoutingVersion: v}), nil
}

// NextSeqs hands out the next value of every key, in order.
func (h Handler) NextSeqs(ctx context.Context, req *connect.Request[seqsvrv1.NextSeqsRequest]) (*connect.Response[seqsvrv1.NextSeqsResponse], error) {
	seqs, v, err := h.n.Next(ctx, req.Msg.GetSpace(), req.Msg.GetKeys(), forwarded(req.Header()))
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(&seqsvrv1.NextSeqsResponse{Seqs: seqs, RoutingVersion: v}), nil
}

// CurrentSeqs reads every key's value.
func (h Handler) CurrentSeqs(ctx context.Context, req *connect.Request[seqsvrv1.CurrentSeqsRequest]) (*connect.Response[seqsvrv1.CurrentSeqsResponse], error) {
	seqs, v, err := h.n.Current(ctx, req.Msg.GetSpace(), req.Msg.GetKeys(), forwarded(req.Header()))
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(&seqsvrv1.CurrentSeqsResponse{Seqs: seqs, RoutingVersion: v}), nil
}

// Routing answers the cached table.
func (h Handler) Routing(_ context.Context, req *connect.Request[seqsvrv1.RoutingRequest]) (*connect.Response[seqsvrv1.RoutingTable], error) {
	t, err := h.n.Routing(req.Msg.GetSpace())
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(t), nil
}
