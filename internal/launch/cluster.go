package launch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// Options describe a cluster to launch.
type Options struct {
	// BinDir holds storesvr and allocsvr (see Build).
	BinDir string
	// Dir holds data/<name>/ and logs/<name>.log.
	Dir    string
	Stores int
	Allocs int
	// Env is added to every process's environment.
	Env []string
	// StoreArgs and AllocArgs are extra flags for every store/alloc.
	StoreArgs, AllocArgs []string
	Logf                 func(string, ...any)

	// Host returns the listen host for a process name ("s1", "a2"); default
	// 127.0.0.1. Wrap returns a command prefix (e.g. ip netns exec).
	Host func(name string) string
	Wrap func(name string) []string
	// Fixed ports instead of free ones when non-zero: store i (1-based) gets
	// StoreHTTPBase+i and StoreRaftBase+i, alloc i gets AllocHTTPBase+i-1.
	StoreHTTPBase, StoreRaftBase, AllocHTTPBase int
	// StartTimeout bounds Start's waits; default 60 s.
	StartTimeout time.Duration
	// Security turns the secure mode on (see NewSecurity): HTTPS, tokens,
	// client certificates and Raft over mutual TLS; nil runs plain HTTP
	// without tokens.
	Security *Security
	// Ordinal runs the stores in the StatefulSet mode with this
	// --ordinal-domain (faults builds only): store i is pod store-(i-1)
	// (OrdinalHostnameEnv), the stores listen on one HTTP and one Raft
	// port, each on an address of its own (OrdinalHost, or its
	// namespace's), and every process resolves OrdinalName through a
	// hosts file under Dir (faults.HostsEnv). Proc.HTTPAddr keeps the
	// address, for the harness's own calls.
	Ordinal string
	// DataDirTmpfs, when non-zero, puts each store's and allocsvr's data
	// dir on a tmpfs of that many bytes (Launch mounts, Close unmounts),
	// so a disk-full fault (Fill) fills that and not the machine's disk.
	// Needs root (MountTmpfs).
	DataDirTmpfs int64
}

// Cluster is a set of storesvr and allocsvr processes.
type Cluster struct {
	Stores, Allocs []*Proc
	opts           Options
	http           *http.Client // admin token in the secure mode
	client         *http.Client // client token in the secure mode

	mu      sync.Mutex
	extra   []*Proc  // NewAlloc
	mounted []string // data dirs Launch mounted (Options.DataDirTmpfs)
}

// New lays out the processes (names, ports, dirs, flags) without starting
// them.
func New(opts Options) (*Cluster, error) {
	if opts.Stores < 1 {
		return nil, errors.New("cluster: need at least one store")
	}
	if opts.Dir == "" || opts.BinDir == "" {
		return nil, errors.New("cluster: Options.Dir and Options.BinDir are required")
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 60 * time.Second
	}
	if opts.Host != nil {
		// Each process has an address of its own (e.g. a network
		// namespace), where free ports cannot be probed from here: use
		// fixed ones.
		opts.StoreHTTPBase = cmp.Or(opts.StoreHTTPBase, 8100)
		opts.StoreRaftBase = cmp.Or(opts.StoreRaftBase, 7100)
		opts.AllocHTTPBase = cmp.Or(opts.AllocHTTPBase, 8080)
	}
	if opts.Ordinal != "" {
		opts.Env = append(slices.Clone(opts.Env), ordinalEnv(opts.Dir))
	}
	c := &Cluster{opts: opts, http: &http.Client{Timeout: 5 * time.Second}}
	c.client = c.http
	if sec := opts.Security; sec != nil {
		var err error
		if c.http, err = sec.client(sec.AdminToken, 5*time.Second); err != nil {
			return nil, err
		}
		if c.client, err = sec.client(sec.ClientToken, 5*time.Second); err != nil {
			return nil, err
		}
		opts.StoreArgs = append(sec.storeArgs(), opts.StoreArgs...)
		opts.AllocArgs = append(sec.allocArgs(), opts.AllocArgs...)
		c.opts = opts
	}
	var ordinalHTTP, ordinalRaft int // the StatefulSet mode's ports: store 1's
	for i := 1; i <= opts.Stores; i++ {
		name := "s" + strconv.Itoa(i)
		host := c.host(name)
		hp, rp := opts.StoreHTTPBase+i, opts.StoreRaftBase+i
		if opts.Ordinal != "" && opts.Host == nil {
			host = OrdinalHost(i)
		}
		var err error
		switch {
		case opts.Ordinal != "" && i > 1:
			// One port for every pod, as in a StatefulSet.
			hp, rp = ordinalHTTP, ordinalRaft
		default:
			if opts.StoreHTTPBase == 0 {
				if hp, err = FreePort(host); err != nil {
					return nil, err
				}
			}
			if opts.StoreRaftBase == 0 {
				if rp, err = FreePort(host); err != nil {
					return nil, err
				}
			}
			ordinalHTTP, ordinalRaft = hp, rp
		}
		p := c.newProc(name, KindStore, host, hp)
		p.RaftAddr = net.JoinHostPort(host, strconv.Itoa(rp))
		if opts.Security != nil {
			p.JoinTokenFile = opts.Security.AdminTokenFile
		}
		p.ExtraArgs = append([]string{}, opts.StoreArgs...)
		if opts.Ordinal != "" {
			p.NodeID = OrdinalNodeID(i)
			p.Ordinal, p.OrdinalInitial = opts.Ordinal, opts.Stores
			p.Env = append(p.Env, OrdinalHostnameEnv+"="+p.NodeID)
		}
		c.Stores = append(c.Stores, p)
	}
	if opts.Ordinal != "" {
		if err := writeOrdinalHosts(opts.Dir, opts.Ordinal, c.Stores); err != nil {
			return nil, err
		}
	}
	peers := PeersFlag(c.Stores)
	for _, s := range c.Stores {
		s.Peers = peers
	}
	for i := 1; i <= opts.Allocs; i++ {
		name := "a" + strconv.Itoa(i)
		host := c.host(name)
		hp := opts.AllocHTTPBase + i - 1
		if opts.AllocHTTPBase == 0 {
			var err error
			if hp, err = FreePort(host); err != nil {
				return nil, err
			}
		}
		p := c.newProc(name, KindAlloc, host, hp)
		p.Stores = c.StoreURLs()
		p.ExtraArgs = append([]string{}, opts.AllocArgs...)
		c.Allocs = append(c.Allocs, p)
	}
	return c, nil
}

func (c *Cluster) host(name string) string {
	if c.opts.Host != nil {
		if h := c.opts.Host(name); h != "" {
			return h
		}
	}
	return "127.0.0.1"
}

func (c *Cluster) newProc(name string, kind Kind, host string, httpPort int) *Proc {
	p := &Proc{
		Name:     name,
		Kind:     kind,
		NodeID:   name,
		HTTPAddr: net.JoinHostPort(host, strconv.Itoa(httpPort)),
		DataDir:  filepath.Join(c.opts.Dir, "data", name),
		LogPath:  filepath.Join(c.opts.Dir, "logs", name+".log"),
		Binary:   filepath.Join(c.opts.BinDir, string(kind)),
		Env:      append([]string{}, c.opts.Env...),
		TLS:      c.opts.Security != nil,
		logf:     c.opts.Logf,
	}
	if c.opts.Wrap != nil {
		p.Wrap = c.opts.Wrap(name)
	}
	return p
}

// Start lays out and starts a cluster: all stores (same --peers), a wait
// for a leader and every store's /readyz, then the allocsvrs and their
// /readyz. On error everything started is killed.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	c, err := New(opts)
	if err != nil {
		return nil, err
	}
	if err := c.Launch(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Launch starts the processes laid out by New and waits for them.
func (c *Cluster) Launch(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	if err := c.mountDataDirs(); err != nil {
		return err
	}
	for _, s := range c.Stores {
		if err := s.Start(ctx); err != nil {
			return err
		}
	}
	if _, err := c.Leader(ctx); err != nil {
		return fmt.Errorf("%w (store logs under %s)", err, filepath.Join(c.opts.Dir, "logs"))
	}
	for _, s := range c.Stores {
		if err := c.WaitReady(ctx, s); err != nil {
			return err
		}
	}
	for _, a := range c.Allocs {
		if err := a.Start(ctx); err != nil {
			return err
		}
	}
	for _, a := range c.Allocs {
		if err := c.WaitReady(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// StoreURLs are the HTTP base URLs of all stores.
func (c *Cluster) StoreURLs() []string {
	urls := make([]string, len(c.Stores))
	for i, s := range c.Stores {
		urls[i] = s.URL()
	}
	return urls
}

// HTTPClient is the client the cluster uses for its own probes and store
// calls; in the secure mode it trusts the CA, presents the certificate
// and sends the admin token.
func (c *Cluster) HTTPClient() *http.Client { return c.http }

// Secure reports whether the cluster runs in the secure mode.
func (c *Cluster) Secure() bool { return c.opts.Security != nil }

// StoreClient is a Connect client for p with the admin token (secure mode):
// the harness creates, deletes and reads tags and changes membership.
func (c *Cluster) StoreClient(p *Proc) seqsvrv1connect.StoreServiceClient {
	return seqsvrv1connect.NewStoreServiceClient(c.http, p.URL())
}

// AllocClient is a Connect client for p with the client token, as an
// application would call it.
func (c *Cluster) AllocClient(p *Proc) seqsvrv1connect.AllocServiceClient {
	return seqsvrv1connect.NewAllocServiceClient(c.client, p.URL())
}

// SeqClient is a Connect client for p's per-key sequence service, with
// the client token.
func (c *Cluster) SeqClient(p *Proc) seqsvrv1connect.SeqServiceClient {
	return seqsvrv1connect.NewSeqServiceClient(c.client, p.URL())
}

// Status asks one store for ClusterStatus with a short deadline.
func (c *Cluster) Status(ctx context.Context, p *Proc) (*seqsvrv1.ClusterStatusResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	resp, err := c.StoreClient(p).ClusterStatus(ctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
	if err != nil {
		return nil, err
	}
	return resp.Msg, nil
}

// CreateTag creates tag through the first store (followers forward),
// retrying until ctx ends while the cluster elects a leader or comes up; a
// tag that already exists counts as created, so a retry after an ambiguous
// failure is safe. A request the store rejects (a bad name, say) fails at
// once.
func (c *Cluster) CreateTag(ctx context.Context, req *seqsvrv1.CreateTagRequest) error {
	cli := c.StoreClient(c.Stores[0])
	return create(ctx, "tag "+req.GetTag(), func(ctx context.Context) error {
		_, err := cli.CreateTag(ctx, connect.NewRequest(req))
		return err
	})
}

// CreateSpace creates a per-key sequence space like CreateTag creates a
// tag: through the first store, retried until ctx ends, an existing space
// counting as created.
func (c *Cluster) CreateSpace(ctx context.Context, req *seqsvrv1.CreateSpaceRequest) error {
	cli := c.StoreClient(c.Stores[0])
	return create(ctx, "space "+req.GetSpace(), func(ctx context.Context) error {
		_, err := cli.CreateSpace(ctx, connect.NewRequest(req))
		return err
	})
}

// createRetry is how create repeats a call: as a store caller.
var createRetry = errs.Policy{Caller: errs.StoreCall, Backoff: errs.Backoff{Min: 100 * time.Millisecond, Max: time.Second}}

// create retries call (2 s per attempt, errs.Retry) until it succeeds,
// answers already_exists, or fails in a way retrying cannot help.
func create(ctx context.Context, what string, call func(context.Context) error) error {
	err := errs.Retry(ctx, createRetry, func(ctx context.Context, _ int) error {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := call(cctx); connect.CodeOf(err) != connect.CodeAlreadyExists {
			return err
		}
		return nil // an earlier attempt's create, whose answer was lost
	})
	if err != nil {
		return fmt.Errorf("create %s: %w", what, err)
	}
	return nil
}

// Leader polls the running, unpaused stores until one of them names a
// leader that is one of ours, running, and itself claims leadership.
func (c *Cluster) Leader(ctx context.Context) (*Proc, error) {
	var lastErr error
	for {
		for _, s := range c.Stores {
			if !s.Running() || s.Paused() {
				continue
			}
			st, err := c.Status(ctx, s)
			if err != nil {
				lastErr = err
				continue
			}
			l := c.StoreByID(st.GetLeaderId())
			if l == nil || !l.Running() || l.Paused() {
				lastErr = fmt.Errorf("%s reports leader %q", s.Name, st.GetLeaderId())
				continue
			}
			if l != s {
				if st, err = c.Status(ctx, l); err != nil {
					lastErr = err
					continue
				}
			}
			if st.GetLeaderId() == l.NodeID {
				return l, nil
			}
		}
		if err := Sleep(ctx, 100*time.Millisecond); err != nil {
			return nil, fmt.Errorf("cluster: no leader: %w (last: %v)", err, lastErr)
		}
	}
}

// StoreByID finds a store by its node ID.
func (c *Cluster) StoreByID(id string) *Proc {
	for _, s := range c.Stores {
		if s.NodeID == id && id != "" {
			return s
		}
	}
	return nil
}

// WaitReady polls p's /readyz until it answers 200, p exits, or ctx ends.
func (c *Cluster) WaitReady(ctx context.Context, p *Proc) error {
	var last string
	for {
		if !p.Running() {
			return fmt.Errorf("cluster: %s exited before ready (%v); log: %s", p.Name, p.ExitErr(), p.LogPath)
		}
		ok, msg := c.probe(ctx, p.URL()+"/readyz")
		if ok {
			return nil
		}
		last = msg
		if err := Sleep(ctx, 100*time.Millisecond); err != nil {
			return fmt.Errorf("cluster: %s not ready: %w (last: %s); log: %s", p.Name, err, last, p.LogPath)
		}
	}
}

func (c *Cluster) probe(ctx context.Context, url string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, err.Error()
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return false, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, resp.Status
}

// All lists stores then allocs (not the extra ones of NewAlloc).
func (c *Cluster) All() []*Proc {
	return append(append([]*Proc{}, c.Stores...), c.Allocs...)
}

// Close kills every process (resuming paused ones is unnecessary for
// SIGKILL). Safe to call more than once.
func (c *Cluster) Close() {
	c.mu.Lock()
	all := append(c.All(), c.extra...)
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range all {
		wg.Add(1)
		go func() { defer wg.Done(); _ = p.Kill() }()
	}
	wg.Wait()
	c.unmountDataDirs()
}

// mountDataDirs mounts Options.DataDirTmpfs on every data dir not yet
// mounted.
func (c *Cluster) mountDataDirs() error {
	if c.opts.DataDirTmpfs <= 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.All() {
		if slices.Contains(c.mounted, p.DataDir) {
			continue
		}
		if err := MountTmpfs(p.DataDir, c.opts.DataDirTmpfs); err != nil {
			return err
		}
		c.mounted = append(c.mounted, p.DataDir)
	}
	return nil
}

// unmountDataDirs undoes mountDataDirs (after the processes are killed).
func (c *Cluster) unmountDataDirs() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, dir := range c.mounted {
		if err := Unmount(dir); err != nil && c.opts.Logf != nil {
			c.opts.Logf("%v", err)
		}
	}
	c.mounted = nil
}

// NewAlloc lays out an extra allocsvr (not started) with its own port and
// data dir but the given node ID, e.g. a twin of an existing one. Close
// kills it too, until DropAlloc.
func (c *Cluster) NewAlloc(name, nodeID string) (*Proc, error) {
	host := c.host(name)
	port := c.opts.AllocHTTPBase + 50 // distinct from every alloc's fixed port
	if c.opts.Host == nil {
		var err error
		if port, err = FreePort(host); err != nil {
			return nil, err
		}
	}
	p := c.newProc(name, KindAlloc, host, port)
	p.NodeID = nodeID
	p.Stores = c.StoreURLs()
	p.ExtraArgs = append([]string{}, c.opts.AllocArgs...)
	c.mu.Lock()
	c.extra = append(c.extra, p)
	c.mu.Unlock()
	return p, nil
}

// DropAlloc forgets a Proc made by NewAlloc (after it was killed).
func (c *Cluster) DropAlloc(p *Proc) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.extra = slices.DeleteFunc(c.extra, func(q *Proc) bool { return q == p })
}
