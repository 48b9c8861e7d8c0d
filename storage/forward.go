package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// ForwardedHeader marks a call a follower passed on to the leader. A
// forwarded call is never forwarded again, so a stale view of who leads
// cannot bounce a call around the cluster.
const ForwardedHeader = "Seqsvr-Forwarded"

// localCall serves a request on this member; it returns ErrNotLeader when
// the call should go to the leader. remoteCall is the generated client's
// method for the same RPC.
type (
	localCall[Req, Resp any]  func(context.Context, *Req) (*Resp, error)
	remoteCall[Req, Resp any] func(seqsvrv1connect.StoreServiceClient, context.Context, *connect.Request[Req]) (*connect.Response[Resp], error)
)

// serve runs local; if this member is not the leader and the call was not
// already forwarded, it calls the leader once and answers with the leader's
// response or error (a *connect.Error, which errs.Connect passes through
// with its code unchanged).
func serve[Req, Resp any](
	ctx context.Context, s *Store, req *connect.Request[Req],
	local localCall[Req, Resp],
	remote remoteCall[Req, Resp],
) (*connect.Response[Resp], error) {
	resp, err := route(ctx, s, req, local, remote)
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(resp), nil
}

func route[Req, Resp any](
	ctx context.Context, s *Store, req *connect.Request[Req],
	local localCall[Req, Resp],
	remote remoteCall[Req, Resp],
) (*Resp, error) {
	resp, err := runLocal(ctx, s, local, req.Msg)
	if !errors.Is(err, ErrNotLeader) {
		return resp, err
	}
	if req.Header().Get(ForwardedHeader) != "" {
		return nil, fmt.Errorf("%w: forwarded here, but this member no longer leads; retry", ErrNotLeader)
	}
	leader, was, self, err := s.awaitLeader(ctx, "")
	if err != nil {
		return nil, err
	}
	if self {
		// Leadership came here while the call waited.
		return local(ctx, req.Msg)
	}
	fwd := connect.NewRequest(req.Msg)
	fwd.Header().Set(ForwardedHeader, "1")
	// The leader checks the caller's own token again (members trust no
	// one by membership alone): a follower cannot lend its rights.
	if a := req.Header().Get("Authorization"); a != "" {
		fwd.Header().Set("Authorization", a)
	}
	out, err := remote(leader, ctx, fwd)
	if err != nil && ctx.Err() == nil && errs.Judge(errs.StoreCall, err).Retry {
		// That leader was handing over, or is gone, or gave no certain
		// answer: the call goes once more to the next one. It is the
		// same request, as the caller's retry would send, so its
		// request_id still holds.
		if leader, _, self, nerr := s.awaitLeader(ctx, was); nerr == nil {
			if self {
				return local(ctx, req.Msg)
			}
			out, err = remote(leader, ctx, fwd)
		}
	}
	if err != nil {
		return nil, err
	}
	return out.Msg, nil
}

// leaderClient returns a client for the current leader's HTTP address.
func (s *Store) leaderClient() (seqsvrv1connect.StoreServiceClient, error) {
	c, _, err := s.leaderClientID()
	return c, err
}

// leaderClientID is leaderClient and the leader it calls.
func (s *Store) leaderClientID() (seqsvrv1connect.StoreServiceClient, raft.ServerID, error) {
	_, id := s.raft.LeaderWithID()
	if id == "" {
		return nil, "", fmt.Errorf("%w: no leader is known to %s; retry", ErrNoLeader, s.cfg.NodeID)
	}
	if string(id) == s.cfg.NodeID {
		return nil, "", fmt.Errorf("%w: leadership is changing; retry", errs.Unavailable)
	}
	addr := s.httpAddrOf(string(id))
	if addr == "" {
		return nil, "", fmt.Errorf("%w: the HTTP address of leader %s is not known yet; retry", errs.Unavailable, id)
	}
	return s.client(addr), id, nil
}

// httpAddrOf looks a member's HTTP address up in the FSM, then in the
// bootstrap list (before the first leader has recorded it).
func (s *Store) httpAddrOf(id string) string {
	if m := s.fsm.Member(id); m != nil {
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
		base = s.cfg.HTTPScheme + "://" + base
	}
	c := seqsvrv1connect.NewStoreServiceClient(s.cfg.HTTPClient, base)
	actual, _ := s.clients.LoadOrStore(addr, c)
	return actual.(seqsvrv1connect.StoreServiceClient)
}
