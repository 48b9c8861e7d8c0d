package storage

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/routes"
)

// testNode is one in-process member: raft over InmemTransport, state in
// memory, and a real HTTP server (HTTP/1.1 + h2c) serving its Service so
// forwarding goes through the generated Connect client.
type testNode struct {
	id      string
	addr    raft.ServerAddress
	trans   *raft.InmemTransport
	store   *Store
	srv     *httptest.Server
	handler atomic.Pointer[http.Handler]
	stopped atomic.Bool
	// waitingReady is the readiness check of a member waiting to start
	// raft (Config.ServeWhileWaiting).
	waitingReady atomic.Pointer[func(context.Context) error]
}

func (n *testNode) httpAddr() string { return n.srv.Listener.Addr().String() }

func (n *testNode) client() seqsvrv1connect.StoreServiceClient {
	return seqsvrv1connect.NewStoreServiceClient(DefaultHTTPClient(), "http://"+n.httpAddr())
}

// patientClient is client() retrying unavailable answers for up to 15 s,
// as the contract tells callers to: a test of what the members answer
// must not fail on an election that a loaded machine caused. Tests that
// expect unavailable use client().
func (n *testNode) patientClient() seqsvrv1connect.StoreServiceClient {
	retry := connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			deadline := time.Now().Add(15 * time.Second)
			for {
				res, err := next(ctx, req)
				if connect.CodeOf(err) != connect.CodeUnavailable || time.Now().After(deadline) || ctx.Err() != nil {
					return res, err
				}
				time.Sleep(100 * time.Millisecond)
			}
		}
	})
	return seqsvrv1connect.NewStoreServiceClient(DefaultHTTPClient(), "http://"+n.httpAddr(), connect.WithInterceptors(retry))
}

type testCluster struct {
	t     testing.TB
	nodes []*testNode
}

func testLogger() *slog.Logger {
	if os.Getenv("STORAGE_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testConfig has hashicorp/raft's LAN timeouts, five times the store's
// own defaults: the race detector on a shared 2-core box must not cause
// spurious elections. With 300/300/150 ms a leader stepped down in the
// middle of TestClusterSeqSpaces under load ("this member no longer
// leads"): a 150 ms lease is lost to one scheduling stall.
func testConfig(id, raftAddr, httpAddr string) Config {
	return Config{
		NodeID: id, RaftAddr: raftAddr, HTTPAddr: httpAddr, Logger: testLogger(),
		HeartbeatTimeout: time.Second, ElectionTimeout: time.Second,
		LeaderLeaseTimeout: 500 * time.Millisecond, CommitTimeout: 10 * time.Millisecond,
	}
}

func newTestNode(t testing.TB) *testNode {
	n := &testNode{}
	n.addr, n.trans = raft.NewInmemTransportWithTimeout("", time.Second)
	n.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := n.handler.Load(); h != nil {
			(*h).ServeHTTP(w, r)
			return
		}
		http.Error(w, "not started", http.StatusServiceUnavailable)
	}))
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	n.srv.Config.Protocols = p
	n.srv.Start()
	t.Cleanup(n.srv.Close)
	return n
}

func (n *testNode) start(t testing.TB, cfg Config) {
	t.Helper()
	if err := n.startErr(cfg, memParts(raft.NewInmemStore(), raft.NewInmemStore())); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.stop() })
}

// memParts are raft's in-memory stores on the node's transport; logs and
// stable outlive a stop when a test keeps them (a restart with its data).
func memParts(logs raft.LogStore, stable raft.StableStore) func(*testNode) raftParts {
	return func(n *testNode) raftParts {
		return raftParts{trans: n.trans, logs: logs, stable: stable, snaps: raft.NewInmemSnapshotStore()}
	}
}

// startErr opens the member, serving what it answers while it waits
// (MemberProbe) on the node's HTTP server, then its whole Service.
func (n *testNode) startErr(cfg Config, parts func(*testNode) raftParts) error {
	return n.startCtx(context.Background(), cfg, parts)
}

func (n *testNode) startCtx(ctx context.Context, cfg Config, parts func(*testNode) raftParts) error {
	cfg.RaftAddr = string(n.addr)
	cfg.HTTPAddr = n.httpAddr()
	cfg.ServeWhileWaiting = func(t routes.Table, ready func(context.Context) error) {
		n.waitingReady.Store(&ready)
		mux := http.NewServeMux()
		for _, svc := range t.Services() {
			mux.Handle(svc.Path, svc.Handler)
		}
		var h http.Handler = mux
		n.handler.Store(&h)
	}
	s, err := openContext(ctx, cfg, func(Config) (raftParts, error) { return parts(n), nil })
	if err != nil {
		return err
	}
	n.store = s
	n.stopped.Store(false)
	_, h := seqsvrv1connect.NewStoreServiceHandler(s.Service())
	n.handler.Store(&h)
	return nil
}

// startAll starts the nodes at once, each with its cfg: members without
// state wait for each other before they bootstrap.
func startAll(t testing.TB, nodes []*testNode, cfg func(*testNode) Config) {
	t.Helper()
	errc := make(chan error, len(nodes))
	for _, node := range nodes {
		go func() { errc <- node.startErr(cfg(node), memParts(raft.NewInmemStore(), raft.NewInmemStore())) }()
	}
	for range nodes {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range nodes {
		t.Cleanup(func() { node.stop() })
	}
}

func (n *testNode) stop() {
	if n.store == nil || n.stopped.Swap(true) {
		return
	}
	n.handler.Store(nil) // a stopped process answers nothing
	n.srv.CloseClientConnections()
	_ = n.store.Close()
}

func connectAll(nodes []*testNode) {
	for _, a := range nodes {
		for _, b := range nodes {
			if a != b {
				a.trans.Connect(b.addr, b.trans)
			}
		}
	}
}

// newTestCluster starts n members bootstrapped from the same peers list.
// A test on a cluster takes from half a second to a few: it is skipped
// with -short (make test-unit).
func newTestCluster(t testing.TB, n int, tweak func(*Config)) *testCluster {
	skipShort(t)
	c := &testCluster{t: t}
	for i := 0; i < n; i++ {
		node := newTestNode(t)
		node.id = "n" + strconv.Itoa(i+1)
		c.nodes = append(c.nodes, node)
	}
	connectAll(c.nodes)
	var peers []Peer
	for _, node := range c.nodes {
		peers = append(peers, Peer{ID: node.id, RaftAddr: string(node.addr), HTTPAddr: node.httpAddr()})
	}
	startAll(t, c.nodes, func(node *testNode) Config {
		cfg := testConfig(node.id, "", "")
		cfg.Peers = slices.Clone(peers) // tweaks run at once, each on its own list
		if tweak != nil {
			tweak(&cfg)
		}
		return cfg
	})
	return c
}

func (c *testCluster) live() []*testNode {
	var out []*testNode
	for _, n := range c.nodes {
		if !n.stopped.Load() {
			out = append(out, n)
		}
	}
	return out
}

// waitForLeader polls until exactly one of the given members leads, all of
// them agree on it, and it has finished its per-term setup (barrier and
// member addresses), so it serves reads and forwarding works.
func (c *testCluster) waitForLeader(among ...*testNode) *testNode {
	c.t.Helper()
	if len(among) == 0 {
		among = c.live()
	}
	var leader *testNode
	poll.Until(c.t, 15*time.Second, "an agreed leader", func() bool {
		leader = nil
		agree := true
		for _, n := range among {
			if n.store.raft.State() == raft.Leader {
				if leader != nil {
					agree = false
				}
				leader = n
			}
		}
		if leader == nil || !agree {
			return false
		}
		for _, n := range among {
			if _, id := n.store.raft.LeaderWithID(); string(id) != leader.id {
				return false
			}
		}
		return leader.store.Ready(context.Background()) == nil
	})
	return leader
}

func (c *testCluster) followers(leader *testNode) []*testNode {
	var out []*testNode
	for _, n := range c.live() {
		if n != leader {
			out = append(out, n)
		}
	}
	return out
}

// skipShort skips a test that runs raft members under -short.
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts raft members; skipped with -short")
	}
}

// stateOnly is st without the record of the last command applied (its
// index, term and time), which a command refused by the state machine
// moves too.
func stateOnly(st *seqsvrv1.FSMSnapshot) *seqsvrv1.FSMSnapshot {
	st.LastIndex, st.LastTerm, st.LastNowMs = 0, 0, 0
	return st
}
