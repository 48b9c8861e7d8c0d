package seq

import (
	"context"
	"errors"

	"google.golang.org/protobuf/encoding/protowire"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/connectfast"
	"github.com/seqsvr/seqsvr/internal/routes"
)

// Routes is SeqService as n serves it, each procedure once: its connect-go
// handler (Handler), its role (client: allocsvrs forward calls to each
// other with their store token, role alloc, which includes it), its
// serving path under the fault harness's coverage gate (Gated), and for
// NextSeq the HTTP/1.1 front's route, which
// answers a Connect binary NextSeq of a key n serves. Forwarding stays
// with connect-go: a key of another allocsvr's section, and a call
// carrying ForwardedHeader (whatever its value), are declined before
// anything is taken, and the handler answers them as without the front.
func (n *Node) Routes() routes.Table {
	h := n.Handler()
	return routes.Table{Procedures: []routes.Procedure{
		routes.Unary(seqsvrv1connect.SeqServiceNextSeqProcedure, auth.Client, h.NextSeq).WithFast(n.nextSeqFast, ForwardedHeader).
			Gated(appendNextSeq, n.NextSeqHere, n.NextSeq, n.one, n.oneFast),
		routes.Unary(seqsvrv1connect.SeqServiceNextSeqsProcedure, auth.Client, h.NextSeqs).Gated(),
		routes.Unary(seqsvrv1connect.SeqServiceCurrentSeqsProcedure, auth.Client, h.CurrentSeqs).Gated(),
		routes.Unary(seqsvrv1connect.SeqServiceRoutingProcedure, auth.Client, h.Routing).Gated(),
	}}
}

// nextSeqFast is NextSeq for connectfast: NextSeqHere's answer, or a fall
// through to the handler when another allocsvr serves the key.
func (n *Node) nextSeqFast(ctx context.Context, body []byte) ([]byte, error) {
	var req seqsvrv1.NextSeqRequest
	if err := connectfast.Decode(body, &req); err != nil {
		return nil, err
	}
	v, version, err := n.NextSeqHere(ctx, req.GetSpace(), req.GetKey())
	if errors.Is(err, ErrNotOwner) {
		return nil, connectfast.ErrFallThrough // nothing taken; the handler forwards it
	}
	if err != nil {
		return nil, err
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
