package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/jepsen/history"
)

// Every scenario's load goes through every serving path (history.Paths):
// connect-go over HTTP/2, the Connect binary protocol over HTTP/1.1
// keep-alive (which the allocsvrs' and the stores' HTTP/1.1 front
// answers), the Leaf GETs over both, and the Go client over both. The
// shares below are of each worker's calls; the same checkers read every
// path's operations.
const (
	// shareH1 and shareLeaf are the percentages of an alloc or per-key
	// worker's calls over PathH1 and over the Leaf GETs (split between
	// leafH1Share percent over HTTP/1.1 and the rest over HTTP/2); the
	// rest go over PathH2.
	shareH1     = 30
	shareLeaf   = 30
	leafH1Share = 60
	// storeShareH1 is the percentage of the store workers' reservations
	// sent over HTTP/1.1 (the store's front answers them on the leader).
	storeShareH1 = 30
)

// transports are the harness's HTTP clients per protocol: tokens as
// launch.Cluster's own clients carry them (client for the allocsvrs,
// admin for the stores), keep-alive, many connections per host.
//
// The front hands a connection to net/http for good when it declines a
// request (a call that is not one of its routes, a key another allocsvr
// serves, a reservation sent to a follower). So the calls the fronts
// answer have connection pools of their own, apart from the other
// HTTP/1.1 calls (allocH1): allocFront for NextIDs, NextIDRanges and the
// Leaf segment GET, which it always answers; seqFront for NextSeq and
// the Leaf per-key next GET, which it declines for a key another
// allocsvr serves; storeH1 for ReserveSegment, which a follower declines;
// clientH1 for the Go client's worker over HTTP/1.1, whose Routing
// refreshes the front declines.
// And renew closes the idle connections of every HTTP/1.1 pool every
// frontRenew, so a connection handed off after a decline is replaced by
// one the front serves.
type transports struct {
	allocFront, seqFront, allocH1, allocH2, storeH1, clientH1 *http.Client
}

// frontRenew is how often renew closes the HTTP/1.1 pools' idle
// connections: each lives for many calls, and a handed-off one not for
// long.
const frontRenew = time.Second

// newTransports builds the clients for c; sec is nil in the plain mode.
func newTransports(sec *launch.Security) (*transports, error) {
	var t transports
	var err error
	clientTok, adminTok := "", ""
	if sec != nil {
		clientTok, adminTok = sec.ClientToken, sec.AdminToken
	}
	for _, c := range []struct {
		hc    **http.Client
		token string
		h2    bool
	}{{&t.allocFront, clientTok, false}, {&t.seqFront, clientTok, false}, {&t.allocH1, clientTok, false}, {&t.allocH2, clientTok, true}, {&t.storeH1, adminTok, false}, {&t.clientH1, clientTok, false}} {
		if *c.hc, err = httpClient(sec, c.token, c.h2); err != nil {
			return nil, err
		}
	}
	return &t, nil
}

// renew closes the HTTP/1.1 pools' idle connections every frontRenew
// until ctx ends.
func (t *transports) renew(ctx context.Context) {
	tick := time.NewTicker(frontRenew)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			for _, hc := range []*http.Client{t.allocFront, t.seqFront, t.allocH1, t.storeH1, t.clientH1} {
				hc.CloseIdleConnections()
			}
		}
	}
}

// Which HTTP/1.1 pool a call takes.
const (
	poolOther = iota // not a front route
	poolFront        // a route the front always answers
	poolSeq          // a per-key route the front answers for the keys its allocsvr serves
)

func (t *transports) h1(pool int) *http.Client {
	switch pool {
	case poolFront:
		return t.allocFront
	case poolSeq:
		return t.seqFront
	}
	return t.allocH1
}

// httpClient speaks only HTTP/1.1 (h2 false: ALPN offers http/1.1 alone,
// so the server's front serves the connection) or only HTTP/2 (h2 by
// ALPN, or h2c in the plain mode). The timeout only bounds a call whose
// context has none.
func httpClient(sec *launch.Security, token string, h2 bool) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// The workers share these clients: keep their connections alive.
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 256, 64
	var p http.Protocols
	switch {
	case !h2:
		p.SetHTTP1(true)
	case sec != nil:
		p.SetHTTP2(true)
	default:
		p.SetUnencryptedHTTP2(true)
	}
	tr.Protocols = &p
	tr.ForceAttemptHTTP2 = h2
	if sec != nil {
		keys, err := tlsconf.LoadKeyPair(sec.CertFile, sec.KeyFile, nil)
		if err != nil {
			return nil, err
		}
		cfg, err := tlsconf.Client(sec.CAFile, keys)
		if err != nil {
			return nil, fmt.Errorf("harness: TLS client: %w", err)
		}
		if !h2 {
			cfg.NextProtos = []string{"http/1.1"}
		}
		tr.TLSClientConfig = cfg
	}
	var rt http.RoundTripper = tr
	if token != "" {
		rt = auth.BearerTransport(token, tr)
	}
	return &http.Client{Transport: rt, Timeout: 30 * time.Second}, nil
}

// The HTTP/1.1 Connect clients use connect-go's defaults, the binary
// codec and POST: the front's routes are Connect unary binary POSTs.
func (t *transports) allocClientH1(p *launch.Proc, pool int) seqsvrv1connect.AllocServiceClient {
	return seqsvrv1connect.NewAllocServiceClient(t.h1(pool), p.URL())
}

func (t *transports) seqClientH1(p *launch.Proc, pool int) seqsvrv1connect.SeqServiceClient {
	return seqsvrv1connect.NewSeqServiceClient(t.h1(pool), p.URL())
}

func (t *transports) storeClientH1(p *launch.Proc) seqsvrv1connect.StoreServiceClient {
	return seqsvrv1connect.NewStoreServiceClient(t.storeH1, p.URL())
}

// pickPath draws the serving path of one alloc or per-key worker call.
func (w *workload) pickPath(r *rand.Rand) string {
	n := r.Intn(100)
	switch {
	case n < shareH1 && w.allowed(history.PathH1):
		return history.PathH1
	case n >= shareH1 && n < shareH1+shareLeaf && w.allowed(history.PathLeafH1):
		if r.Intn(100) < leafH1Share {
			return history.PathLeafH1
		}
		return history.PathLeafH2
	}
	return history.PathH2
}

// allowed reports whether the run's Config.Paths lets path carry load.
func (w *workload) allowed(path string) bool {
	if len(w.cfg.Paths) == 0 {
		return true
	}
	for _, p := range w.cfg.Paths {
		if p == path || p == "leaf" && strings.HasPrefix(path, "leaf-") {
			return true
		}
	}
	return false
}

// leafGet is one Leaf GET of path (e.g. /api/segment/get/ids-0) on p
// over path's transport (over HTTP/1.1, the pool's): the decimal value of a 200, else an error whose
// Connect code is the one the status stands for (errs.HTTPStatus), with
// the body's one-line reason.
func (w *workload) leafGet(ctx context.Context, p *launch.Proc, leafPath, urlPath string, pool int) (int64, error) {
	hc := w.tr.allocH2
	if leafPath == history.PathLeafH1 {
		hc = w.tr.h1(pool)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+urlPath, nil)
	if err != nil {
		return 0, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, leafTransportError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if err != nil {
		return 0, connect.NewError(connect.CodeUnknown, err)
	}
	text := strings.TrimSpace(string(body))
	if resp.StatusCode != http.StatusOK {
		return 0, connect.NewError(leafCode(resp.StatusCode), fmt.Errorf("leaf %d: %s", resp.StatusCode, text))
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		// A 200 that is not a number would be a server bug: fail the
		// call with a code no checker excuses.
		return 0, connect.NewError(connect.CodeInternal, fmt.Errorf("leaf 200 with body %q", text))
	}
	return v, nil
}

// leafTransportError keeps a dial error visible to workload.end (NotSent)
// and gives a timeout its Connect code.
func leafTransportError(err error) error {
	var ne *net.OpError
	if errors.As(err, &ne) && ne.Op == "dial" {
		return ne
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	if errors.Is(err, context.Canceled) {
		return connect.NewError(connect.CodeCanceled, err)
	}
	return connect.NewError(connect.CodeUnavailable, err)
}

// leafCode is the Connect code a Leaf status stands for: errs.HTTPStatus
// read backwards (503 is unavailable; canceled maps there too, and reads
// as the retryable one).
func leafCode(status int) connect.Code {
	switch status {
	case http.StatusBadRequest:
		return connect.CodeInvalidArgument
	case http.StatusNotFound:
		return connect.CodeNotFound
	case http.StatusConflict:
		return connect.CodeAlreadyExists
	case http.StatusPreconditionFailed:
		return connect.CodeFailedPrecondition
	case http.StatusUnauthorized:
		return connect.CodeUnauthenticated
	case http.StatusForbidden:
		return connect.CodePermissionDenied
	case http.StatusServiceUnavailable:
		return connect.CodeUnavailable
	case http.StatusTooManyRequests:
		return connect.CodeResourceExhausted
	case http.StatusGatewayTimeout:
		return connect.CodeDeadlineExceeded
	}
	return connect.CodeInternal
}
