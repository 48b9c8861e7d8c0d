package storeclient

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// Options tunes a Client. Zero values take DefaultOptions'.
type Options struct {
	// HTTPClient defaults to the package's own HTTP/1.1 keep-alive client
	// (h1client.go: each call on the caller's goroutine, up to
	// MaxIdleConnsPerHost connections per member, deadlines from the
	// contexts, TLS from the TLS field, no proxy). Pass one to speak HTTP/2
	// (connect.WithGRPC needs it) or to go through a proxy.
	HTTPClient *http.Client
	// Logger defaults to slog.Default(); the caller names the component.
	Logger *slog.Logger
	// RequestTimeout bounds one attempt against one member (default 2s), so
	// a hung member costs one attempt, not the caller's whole deadline.
	RequestTimeout time.Duration
	// BackoffInitial and BackoffMax space out retries (defaults 20ms, 1s),
	// doubling with jitter.
	BackoffInitial, BackoffMax time.Duration
	// RetryBudget bounds the retries of a call whose context has no
	// deadline (default 10s).
	RetryBudget time.Duration
	// Attempts, when above zero, bounds a call's attempts (default 0:
	// until its deadline).
	Attempts int
	// ClientOptions are passed to the Connect client (e.g.
	// connect.WithGRPC(), with an HTTP/2 HTTPClient).
	ClientOptions []connect.ClientOption
	// Token, when set, is sent as "Authorization: Bearer Token" on every
	// call (a token with role alloc, for a store with --auth-file).
	Token string
	// TokenFunc, when set, is asked for the token on every call instead
	// (auth.TokenFile's Token: a rotated token file is followed).
	TokenFunc func() string
	// TLS configures https:// store URLs of the default HTTPClient (the
	// CA to trust, a client certificate); nil means the system roots. A
	// configuration from tlsconf.Client with a CA file follows that file:
	// new connections trust the CA it holds now.
	TLS *tls.Config
	// DataDir, when set, is where the client remembers the store cluster
	// it follows (store-cluster.json), so that after a restart it still
	// refuses every cluster that one outranked.
	DataDir string
}

// Client calls the store cluster. It sends each call to the member it
// believes leads (learned from ClusterStatus's leader_http_addr), and on
// transport or unavailable errors forgets that leader, asks the members who
// leads now, and retries with backoff until the context's deadline. Other
// errors are answered at once, with the store's Connect code kept and the
// matching kind (errs.NotFound, ...) reachable through errors.Is.
type Client struct {
	urls []*url.URL
	opts Options
	hc   connect.HTTPClient
	log  *slog.Logger

	mu      sync.Mutex
	clients map[string]seqsvrv1connect.StoreServiceClient
	leader  string // base URL of the believed leader; "" if unknown
	next    int    // round-robin position among urls while no leader is known
	// followed is the store cluster the client follows: the highest
	// (generation, cluster ID) seen, never one below it (identity.go).
	followed Identity
	// fenced: members whose last answer named a cluster the client
	// refuses, by URL; fencedAnswers counts such answers.
	fenced        map[string]Identity
	fencedAnswers uint64
	// silent: whole surveys in a row each member left unanswered
	// (noteSilent).
	silent map[string]int
	// refusedAt: when members refused a write as another cluster
	// (callerfence.go).
	refusedAt map[string]time.Time
	// live: members whose last answer named the followed cluster; only
	// they take a call while no leader is known.
	live map[string]bool
	// unreachable: leader addresses this client could not connect to
	// (unreachable.go), and when.
	unreachable map[string]time.Time
	// followMu orders changes of followed with their durable record.
	followMu sync.Mutex
	// onChange are called when the followed cluster changes
	// (OnClusterChange), one change at a time (hookMu).
	onChange []func(was, now string)
	hookMu   sync.Mutex
}

// OnClusterChange registers f to be called each time the client starts
// following another cluster: a member answered a cluster ID other than
// the followed one with a higher generation, so the store was restored
// from a backup or recovered after a quorum loss, and its leases and
// owners start over. The first cluster learned is not a change, unless
// Options.DataDir remembered another one. f runs on a goroutine of its
// own, one change at a time.
func (c *Client) OnClusterChange(f func(was, now string)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onChange = append(c.onChange, f)
}

// ClusterID is the followed cluster's ID ("" before the first).
func (c *Client) ClusterID() string {
	return c.Followed().ClusterID
}

// New returns a client for the store members at urls (base URLs
// such as http://127.0.0.1:7001; a bare host:port means http).
func New(urls []string, opts Options) (*Client, error) {
	if len(urls) == 0 {
		return nil, fmt.Errorf("%w: no store URLs", errs.InvalidArgument)
	}
	c := &Client{opts: opts, clients: map[string]seqsvrv1connect.StoreServiceClient{}, fenced: map[string]Identity{}, silent: map[string]int{}, refusedAt: map[string]time.Time{}, live: map[string]bool{},
		unreachable: map[string]time.Time{}}
	for _, raw := range urls {
		raw = strings.TrimSpace(raw)
		if raw == "" {
			continue
		}
		u, err := parseURL(raw)
		if err != nil {
			return nil, fmt.Errorf("%w: store URL %q: %v", errs.InvalidArgument, raw, err)
		}
		c.urls = append(c.urls, u)
	}
	if len(c.urls) == 0 {
		return nil, fmt.Errorf("%w: no store URLs", errs.InvalidArgument)
	}
	c.hc = newH1Client(c.opts.TLS)
	if c.opts.HTTPClient != nil {
		c.hc = c.opts.HTTPClient
	}
	switch {
	case c.opts.TokenFunc != nil:
		c.opts.ClientOptions = append(c.opts.ClientOptions[:len(c.opts.ClientOptions):len(c.opts.ClientOptions)],
			connect.WithInterceptors(auth.BearerFrom(c.opts.TokenFunc)))
	case c.opts.Token != "":
		c.opts.ClientOptions = append(c.opts.ClientOptions[:len(c.opts.ClientOptions):len(c.opts.ClientOptions)],
			connect.WithInterceptors(auth.Bearer(c.opts.Token)))
	}
	d := DefaultOptions()
	if c.opts.Logger == nil {
		c.opts.Logger = d.Logger
	}
	c.log = c.opts.Logger
	if c.opts.RequestTimeout <= 0 {
		c.opts.RequestTimeout = d.RequestTimeout
	}
	if c.opts.BackoffInitial <= 0 {
		c.opts.BackoffInitial = d.BackoffInitial
	}
	if c.opts.BackoffMax < c.opts.BackoffInitial {
		c.opts.BackoffMax = max(d.BackoffMax, c.opts.BackoffInitial)
	}
	if c.opts.RetryBudget <= 0 {
		c.opts.RetryBudget = d.RetryBudget
	}
	followed, err := loadFollowed(c.opts.DataDir)
	if err != nil {
		return nil, err
	}
	c.followed = followed
	if followed.Known() {
		c.log.Info("remembered store cluster: refusing any other of a generation not above it", "cluster_id", followed.ClusterID, "generation", followed.Generation)
	}
	return c, nil
}

// DefaultOptions are the options where the caller sets nothing: every
// default of the store client, defined here only (the allocsvr's flags
// show these values). A zero field of the Options given to New takes its
// value from here; a nil HTTPClient means the package's own HTTP/1.1
// client.
func DefaultOptions() Options {
	return Options{
		Logger:         slog.Default(),
		RequestTimeout: 2 * time.Second,
		BackoffInitial: 20 * time.Millisecond,
		BackoffMax:     time.Second,
		RetryBudget:    10 * time.Second,
	}
}

func parseURL(raw string) (*url.URL, error) {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, errors.New("scheme must be http or https")
	}
	if u.Host == "" {
		return nil, errors.New("no host")
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return u, nil
}

// GetTag reads a tag (linearizable on the store).
func (c *Client) GetTag(ctx context.Context, tag string) (*seqsvrv1.Tag, error) {
	return invoke(ctx, c, "GetTag", &seqsvrv1.GetTagRequest{Tag: tag}, seqsvrv1connect.StoreServiceClient.GetTag)
}

// ReserveSegment reserves size IDs of tag (0 = the tag's step). requestID is
// the idempotency key the store dedups on; an empty one is replaced by a
// random one so this call's own retries still cannot burn a segment.
func (c *Client) ReserveSegment(ctx context.Context, tag string, size int64, requestID string) (*seqsvrv1.Segment, error) {
	if requestID == "" {
		requestID = rand.Text()
	}
	req := &seqsvrv1.ReserveSegmentRequest{Tag: tag, Size: size, RequestId: requestID}
	return invoke(ctx, c, "ReserveSegment", req, seqsvrv1connect.StoreServiceClient.ReserveSegment)
}

// RegisterWorker registers a snowflake worker. Like every write, req is
// sent naming the followed cluster (its cluster_id is set).
func (c *Client) RegisterWorker(ctx context.Context, req *seqsvrv1.RegisterWorkerRequest) (*seqsvrv1.Worker, error) {
	return invoke(ctx, c, "RegisterWorker", req, seqsvrv1connect.StoreServiceClient.RegisterWorker)
}

// RenewWorker renews a snowflake worker's lease.
func (c *Client) RenewWorker(ctx context.Context, req *seqsvrv1.RenewWorkerRequest) (*seqsvrv1.Worker, error) {
	return invoke(ctx, c, "RenewWorker", req, seqsvrv1connect.StoreServiceClient.RenewWorker)
}

// ClusterStatus asks the believed leader (or any member) for the cluster's
// state, and learns the leader from the answer.
func (c *Client) ClusterStatus(ctx context.Context) (*seqsvrv1.ClusterStatusResponse, error) {
	return invoke(ctx, c, "ClusterStatus", &seqsvrv1.ClusterStatusRequest{}, seqsvrv1connect.StoreServiceClient.ClusterStatus)
}

// Leader is the base URL of the member believed to lead, "" if unknown.
func (c *Client) Leader() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.leader
}

// GetSpace reads a per-key sequence space (linearizable on the store).
func (c *Client) GetSpace(ctx context.Context, space string) (*seqsvrv1.Space, error) {
	return invoke(ctx, c, "GetSpace", &seqsvrv1.GetSpaceRequest{Space: space}, seqsvrv1connect.StoreServiceClient.GetSpace)
}

// GetRouting reads a space's routing table (linearizable on the store).
func (c *Client) GetRouting(ctx context.Context, space string) (*seqsvrv1.RoutingTable, error) {
	return invoke(ctx, c, "GetRouting", &seqsvrv1.GetRoutingRequest{Space: space}, seqsvrv1connect.StoreServiceClient.GetRouting)
}

// SeqHeartbeat renews this allocsvr's per-key sequence lease and answers
// every space's routing table. A retry sends the same request, which the
// store applies idempotently (an upsert; releasing a released span is a
// no-op).
func (c *Client) SeqHeartbeat(ctx context.Context, req *seqsvrv1.SeqHeartbeatRequest) (*seqsvrv1.SeqHeartbeatResponse, error) {
	return invoke(ctx, c, "SeqHeartbeat", req, seqsvrv1connect.StoreServiceClient.SeqHeartbeat)
}

// RaiseSections raises the durable max_seq of sections the caller owns. A
// retry is safe: a raise names the max_seq the caller holds, so applying it
// twice raises to known_max + step once; a retried first load (known_max
// -1) answers a higher prev_max and only skips a step.
func (c *Client) RaiseSections(ctx context.Context, req *seqsvrv1.RaiseSectionsRequest) (*seqsvrv1.RaiseSectionsResponse, error) {
	return invoke(ctx, c, "RaiseSections", req, seqsvrv1connect.StoreServiceClient.RaiseSections)
}
