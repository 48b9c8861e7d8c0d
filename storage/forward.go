package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

// ForwardedHeader marks a call a follower passed on to the leader. A
// forwarded call is never forwarded again, so a stale view of who leads
// cannot bounce a call around the cluster.
const ForwardedHeader = "Seqsvr-Forwarded"

// serve runs local; if this member is not the leader and the call was not
// already forwarded, it calls the leader once and answers with the leader's
// response or error (Connect code unchanged).
func serve[Req, Resp any](
	ctx context.Context, s *Store, req *connect.Request[Req],
	local func(context.Context, *Req) (*Resp, error),
	remote func(seqsvrv1connect.StoreServiceClient, context.Context, *connect.Request[Req]) (*connect.Response[Resp], error),
) (*connect.Response[Resp], error) {
	resp, err := local(ctx, req.Msg)
	if err == nil {
		return connect.NewResponse(resp), nil
	}
	if !errors.Is(err, ErrNotLeader) {
		return nil, ConnectError(err)
	}
	if req.Header().Get(ForwardedHeader) != "" {
		return nil, ConnectError(fmt.Errorf("%w: forwarded here, but this member no longer leads; retry", ErrNotLeader))
	}
	client, err := s.leaderClient()
	if err != nil {
		return nil, ConnectError(err)
	}
	fwd := connect.NewRequest(req.Msg)
	fwd.Header().Set(ForwardedHeader, "1")
	out, err := remote(client, ctx, fwd)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out.Msg), nil
}

// leaderClient returns a client for the current leader's HTTP address.
func (s *Store) leaderClient() (seqsvrv1connect.StoreServiceClient, error) {
	_, id := s.raft.LeaderWithID()
	if id == "" {
		return nil, fmt.Errorf("%w: no leader is known to %s; retry", ErrNoLeader, s.cfg.NodeID)
	}
	if string(id) == s.cfg.NodeID {
		return nil, fmt.Errorf("%w: leadership is changing; retry", ErrUnavailable)
	}
	addr := s.httpAddrOf(string(id))
	if addr == "" {
		return nil, fmt.Errorf("%w: the HTTP address of leader %s is not known yet; retry", ErrUnavailable, id)
	}
	return s.client(addr), nil
}

// httpAddrOf looks a member's HTTP address up in the FSM, then in the
// bootstrap list (before the first leader has recorded it).
func (s *Store) httpAddrOf(id string) string {
	if m := s.fsm.member(id); m != nil {
		return m.GetHttpAddr()
	}
	for _, p := range s.cfg.Peers {
		if p.ID == id {
			return p.HTTPAddr
		}
	}
	return ""
}

func (s *Store) client(addr string) seqsvrv1connect.StoreServiceClient {
	if c, ok := s.clients.Load(addr); ok {
		return c.(seqsvrv1connect.StoreServiceClient)
	}
	base := addr
	if !strings.Contains(base, "://") {
		base = "http://" + base
	}
	c := seqsvrv1connect.NewStoreServiceClient(s.cfg.HTTPClient, base)
	actual, _ := s.clients.LoadOrStore(addr, c)
	return actual.(seqsvrv1connect.StoreServiceClient)
}
