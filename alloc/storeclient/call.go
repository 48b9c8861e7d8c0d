package storeclient

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// quickRetry bounds the pause before a call's first retry: most store
// failures are a member going away (a stop, a leadership handover), which
// the next member answers; only a second failure means the cluster itself
// is changing, and earns the backoff.
const quickRetry = 2 * time.Millisecond

type rpc[Req, Res any] func(seqsvrv1connect.StoreServiceClient, context.Context, *connect.Request[Req]) (*connect.Response[Res], error)

// invoke runs one RPC with leader following and retries (run). Every
// retry sends the same request message, so an idempotency key in it holds
// across retries.
func invoke[Req, Res any](ctx context.Context, c *Client, method string, req *Req, call rpc[Req, Res]) (*Res, error) {
	var out *Res
	err := c.run(ctx, method, func(ctx context.Context, target string, stub seqsvrv1connect.StoreServiceClient) error {
		// Set on each attempt: a retry after a restore names the
		// cluster followed by then.
		stamp(req, c.Followed().ClusterID)
		res, err := call(stub, ctx, connect.NewRequest(req))
		if err != nil {
			return err
		}
		if cs, ok := any(res.Msg).(*seqsvrv1.ClusterStatusResponse); ok {
			// A member of a cluster the client refuses (at the leader's
			// address now) is not answered from: the call goes on to
			// the others.
			if _, err := c.learn(target, cs); err != nil {
				return err
			}
		}
		out = res.Msg
		return nil
	})
	return out, err
}

// Call runs call, one attempt of a store RPC this package has no method
// for (seqctl's admin calls, the Backup stream), with the same leader
// following and retries as the methods: call gets the stub of the member
// to ask and the attempt's context (Options.RequestTimeout). A request
// that must keep its idempotency key across retries is built once,
// outside call. Unlike the methods' requests, it is not stamped with the
// followed cluster.
func (c *Client) Call(ctx context.Context, method string, call func(ctx context.Context, s seqsvrv1connect.StoreServiceClient) error) error {
	return c.run(ctx, method, func(ctx context.Context, _ string, stub seqsvrv1connect.StoreServiceClient) error {
		return call(ctx, stub)
	})
}

// run is the loop of every call: each attempt goes to target's choice of
// member within RequestTimeout; errs.Retry repeats it under the store
// caller's rule within the caller's deadline (or RetryBudget), and a
// member that failed in a way worth retrying is forgotten as the leader,
// so the next attempt goes to another.
func (c *Client) run(ctx context.Context, method string, try func(ctx context.Context, target string, stub seqsvrv1connect.StoreServiceClient) error) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.RetryBudget)
		defer cancel()
	}
	var target string // the member the current attempt went to
	var cause error   // the current attempt's own error, for giveUp
	p := c.retryPolicy()
	p.OnFailure = func(_ int, _ error, v errs.Verdict) {
		if v.Retry {
			// Also when the caller's deadline cut the attempt short: a
			// member that did not answer in the time given (a paused
			// leader) must not get the next call too.
			c.forget(target, cause)
		}
	}
	err := errs.Retry(ctx, p, func(ctx context.Context, _ int) error {
		var err error
		if target, err = c.target(ctx); err != nil {
			cause = err
			return fmt.Errorf("store %s: %w", method, err)
		}
		actx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
		err = try(actx, target, c.client(target))
		cancel()
		if err == nil {
			return nil
		}
		cause = err
		if id, ok := refusedAs(err); ok {
			// An old member at a known address: the call goes on to
			// the others, as after a ClusterStatus naming it. A member
			// of a newer cluster (restored where the followed one
			// stood) is not fenced: the retry's survey follows it.
			if judge(c.Followed(), id) == fenced {
				c.refused(target, id)
			}
			return fmt.Errorf("store %s: %w: %s answers as %s: %v", method, errFenced, target, id, err)
		}
		return errs.FromConnect("store "+method, err)
	})
	var st *errs.Stopped
	switch {
	case err == nil:
		return nil
	case errors.As(err, &st) && st.Ctx != nil:
		return giveUp(ctx, method, st.Attempts, cause)
	case st != nil:
		return st.Last
	}
	return err
}

// retryPolicy is the store caller's errs.Retry policy with the client's
// backoff.
func (c *Client) retryPolicy() errs.Policy {
	return errs.Policy{
		Caller:        errs.StoreCall,
		Backoff:       errs.Backoff{Min: c.opts.BackoffInitial, Max: c.opts.BackoffMax},
		FirstPauseMax: quickRetry,
		Attempts:      c.opts.Attempts,
	}
}

// target is the member to send the next attempt to: the known leader, else
// the leader of the highest cluster the client may follow, as the members
// asked at once name it (survey), else the next member in turn whose last
// answer named that cluster (a follower forwards writes to its leader, so
// that still works; a member not heard from may be an old one). errFenced
// when there is none.
func (c *Client) target(ctx context.Context) (string, error) {
	if l := c.usableLeader(); l != "" {
		return l, nil
	}
	_, err := c.survey(ctx, false)
	if l := c.usableLeader(); err == nil && l != "" {
		return l, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for range c.urls {
		u := c.urls[c.next%len(c.urls)].String()
		c.next++
		// Before any cluster is known (or from stores that name none) any
		// member will do, as it always did.
		if c.live[u] || !c.followed.Known() {
			return u, nil
		}
	}
	if err == nil {
		err = fmt.Errorf("%w: no member names a leader", errFenced)
	}
	return "", err
}

// usableLeader is the believed leader, unless its address last answered
// as a refused cluster: members of the followed cluster may still name
// the address of a leader that an old member has taken over.
func (c *Client) usableLeader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, bad := c.fenced[c.leader]; bad {
		return ""
	}
	if at, ok := c.unreachable[c.leader]; ok && time.Since(at) < unreachableFor {
		return ""
	}
	return c.leader
}

// learnLeader records the leader named by the member at from. An address
// with an unspecified host (":7001", "0.0.0.0:7001") takes from's host.
func (c *Client) learnLeader(from string, cs *seqsvrv1.ClusterStatusResponse) string {
	addr := cs.GetLeaderHttpAddr()
	if addr == "" {
		return ""
	}
	fu, err := url.Parse(from)
	if err != nil {
		return ""
	}
	lu, err := parseURL(addr)
	if err != nil {
		c.log.Warn("store named an unusable leader address", "addr", addr, "err", err)
		return ""
	}
	if !addrHasScheme(addr) {
		lu.Scheme = fu.Scheme
	}
	if host, port, err := net.SplitHostPort(lu.Host); err == nil {
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			lu.Host = net.JoinHostPort(fu.Hostname(), port)
		}
	}
	leader := lu.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader != leader {
		c.log.Info("store leader", "leader", leader, "leader_id", cs.GetLeaderId(), "term", cs.GetTerm())
		c.leader = leader
	}
	return leader
}

func addrHasScheme(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// forget drops target as the believed leader after it failed, and moves
// the round-robin on so the next attempt tries another member.
func (c *Client) forget(target string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.leader == target {
		c.log.Debug("store leader failed", "leader", target, "err", err)
		c.leader = ""
		if cannotConnect(err) {
			c.unreachable[target] = time.Now()
		}
	}
	c.next++
}

func (c *Client) client(base string) seqsvrv1connect.StoreServiceClient {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl, ok := c.clients[base]
	if !ok {
		cl = seqsvrv1connect.NewStoreServiceClient(c.hc, base, c.opts.ClientOptions...)
		c.clients[base] = cl
	}
	return cl
}

// giveUp is the error once the caller's context ends during retries.
func giveUp(ctx context.Context, method string, attempts int, last error) error {
	if ctx.Err() == context.Canceled {
		return fmt.Errorf("store %s: %w (after %d attempts, last error: %v)", method, ctx.Err(), attempts, last)
	}
	return fmt.Errorf("%w: store %s: no answer within the deadline after %d attempts: %w", errs.Unavailable, method, attempts, last)
}
