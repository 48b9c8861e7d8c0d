package seq

import (
	"context"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// part is the keys of a call (by index into the request) that one owner
// serves; url is "" for this Node itself.
type part struct {
	owner, url string
	idx        []int
}

// Next hands out the next value of every key, in order (a key given twice
// takes two values). forwarded marks a call another allocsvr forwarded: it
// is served here or refused, never forwarded again. The answer carries the
// highest routing_version of the tables used.
func (n *Node) Next(ctx context.Context, space string, keys []uint64, forwarded bool) ([]int64, uint64, error) {
	return n.call(ctx, opNext, space, keys, forwarded)
}

// Current reads every key's value without incrementing it (0 for a key
// never used).
func (n *Node) Current(ctx context.Context, space string, keys []uint64, forwarded bool) ([]int64, uint64, error) {
	return n.call(ctx, opCurrent, space, keys, forwarded)
}

// Routing is the space's table as the last heartbeat answered it.
func (n *Node) Routing(space string) (*seqsvrv1.RoutingTable, error) {
	t, err := n.loadTables().get(space)
	if err != nil {
		return nil, err
	}
	return t.msg, nil
}

func (n *Node) call(ctx context.Context, o op, space string, keys []uint64, forwarded bool) ([]int64, uint64, error) {
	t, parts, err := n.plan(space, keys, forwarded)
	if err != nil {
		return nil, 0, err
	}
	out := make([]int64, len(keys))
	version := t.version()
	for _, p := range parts {
		if p.url == "" {
			err = n.serveLocal(ctx, o, t, keys, p.idx, out)
		} else {
			var v uint64
			v, err = n.forward(ctx, o, space, keys, p, out)
			version = max(version, v)
		}
		if err != nil {
			return nil, 0, err
		}
	}
	return out, version, nil
}

// plan checks the call and splits its keys by owner, before anything is
// taken: bad input burns nothing.
func (n *Node) plan(space string, keys []uint64, forwarded bool) (*table, []part, error) {
	if len(keys) == 0 || len(keys) > spec.MaxCount {
		return nil, nil, fmt.Errorf("%w: %d keys, want 1..%d", errs.InvalidArgument, len(keys), spec.MaxCount)
	}
	if err := spec.CheckTag(space); err != nil {
		return nil, nil, err
	}
	t, err := n.loadTables().get(space)
	if err != nil {
		return nil, nil, err
	}
	var parts []part
	for i, key := range keys {
		s, err := t.section(key)
		if err != nil {
			return nil, nil, err
		}
		owner, url, err := n.route(t, s, forwarded)
		if err != nil {
			return nil, nil, err
		}
		j := len(parts) - 1
		for ; j >= 0 && parts[j].owner != owner; j-- {
		}
		if j < 0 {
			parts = append(parts, part{owner: owner, url: url})
			j = len(parts) - 1
		}
		parts[j].idx = append(parts[j].idx, i)
	}
	return t, parts, nil
}

// route is who serves section s: this Node (url "") or the owner to
// forward to.
func (n *Node) route(t *table, s uint64, forwarded bool) (owner, url string, err error) {
	r := t.find(s)
	switch {
	case r == nil || r.GetOwner() == "":
		return "", "", fmt.Errorf("%w: section %d of space %q has no owner yet", errs.Unavailable, s, t.msg.GetSpace())
	case r.GetOwner() == n.cfg.NodeID && r.GetNextOwner() != "":
		return "", "", fmt.Errorf("%w: section %d of space %q is moving to %s", errs.Unavailable, s, t.msg.GetSpace(), r.GetNextOwner())
	case r.GetOwner() == n.cfg.NodeID:
		return r.GetOwner(), "", nil
	case forwarded:
		return "", "", fmt.Errorf("%w: not the owner of section %d of space %q (a forwarded call is not forwarded again)", errs.Unavailable, s, t.msg.GetSpace())
	case r.GetOwnerUrl() == "":
		return "", "", fmt.Errorf("%w: section %d of space %q: owner %s has no URL", errs.Unavailable, s, t.msg.GetSpace(), r.GetOwner())
	}
	return r.GetOwner(), r.GetOwnerUrl(), nil
}

// serveLocal serves keys[idx] from this Node's sections into out.
func (n *Node) serveLocal(ctx context.Context, o op, t *table, keys []uint64, idx []int, out []int64) error {
	size := t.msg.GetSectionSize()
	var s *section
	for _, i := range idx {
		k := secKey{space: t.msg.GetSpace(), section: keys[i] / size}
		if s == nil || s.key != k {
			var err error
			if s, err = n.section(k); err != nil {
				return err
			}
		}
		v, err := n.take(ctx, s, int(keys[i]-k.section*size), o)
		if err != nil {
			return err
		}
		out[i] = v
	}
	return nil
}

// forward sends keys[p.idx] to their owner once, marked forwarded, and
// fills out with its answer.
func (n *Node) forward(ctx context.Context, o op, space string, keys []uint64, p part, out []int64) (uint64, error) {
	sub := make([]uint64, len(p.idx))
	for j, i := range p.idx {
		sub[j] = keys[i]
	}
	n.forwards.Add(1)
	c := n.peer(p.url)
	var (
		seqs    []int64
		version uint64
		err     error
		name    = "forward NextSeqs to " + p.owner
	)
	if o == opNext {
		res, e := forwardOnce(ctx, c.NextSeqs, &seqsvrv1.NextSeqsRequest{Space: space, Keys: sub})
		seqs, version, err = res.GetSeqs(), res.GetRoutingVersion(), e
	} else {
		name = "forward CurrentSeqs to " + p.owner
		res, e := forwardOnce(ctx, c.CurrentSeqs, &seqsvrv1.CurrentSeqsRequest{Space: space, Keys: sub})
		seqs, version, err = res.GetSeqs(), res.GetRoutingVersion(), e
	}
	if err != nil {
		if connect.CodeOf(err) == connect.CodeCanceled && ctx.Err() == nil {
			// Not our caller giving up: connect-go reports some transport
			// failures as canceled (a write into a connection the owner's
			// death closed), and the caller must read "try again", not a
			// code no retry loop expects.
			msg := err.Error()
			if ce := new(connect.Error); errors.As(err, &ce) {
				msg = ce.Message()
			}
			return 0, fmt.Errorf("%w: %s: %s", errs.Unavailable, name, msg)
		}
		return 0, errs.FromConnect(name, err)
	}
	if len(seqs) != len(sub) {
		return 0, fmt.Errorf("%w: %s answered %d values for %d keys", errs.Unavailable, name, len(seqs), len(sub))
	}
	for j, i := range p.idx {
		out[i] = seqs[j]
	}
	return version, nil
}

// forwardOnce makes one call marked forwarded.
func forwardOnce[Req, Res any](ctx context.Context, call func(context.Context, *connect.Request[Req]) (*connect.Response[Res], error), msg *Req) (*Res, error) {
	req := connect.NewRequest(msg)
	req.Header().Set(ForwardedHeader, "1")
	res, err := call(ctx, req)
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

// peer is the client for the allocsvr at url, made on first use.
func (n *Node) peer(url string) seqsvrv1connect.SeqServiceClient {
	if c, ok := n.peers.Load(url); ok {
		return c.(seqsvrv1connect.SeqServiceClient)
	}
	c, _ := n.peers.LoadOrStore(url, seqsvrv1connect.NewSeqServiceClient(n.cfg.HTTPClient, url, n.cfg.ClientOptions...))
	return c.(seqsvrv1connect.SeqServiceClient)
}
