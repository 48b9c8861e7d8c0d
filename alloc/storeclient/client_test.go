package storeclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/alloc/segment"
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// fakeCluster is a tiny in-process stand-in for a storesvr cluster,
// for the store client's unit tests only: one member leads, the others
// refuse with unavailable (no forwarding), so the client must follow.
type fakeCluster struct {
	mu         sync.Mutex
	leader     int // -1: no leader
	nodes      []*httptest.Server
	addrStyle  func(u string) string // how leader_http_addr is spelled
	maxID      map[string]int64
	byReq      map[string]*seqsvrv1.Segment
	commits    int
	loseReply  bool
	hang       int              // a member whose ReserveSegment hangs until wake closes; -1 none
	wake       chan struct{}    // closed when the test ends
	calls      map[string]int   // "node/method" -> count
	clusterID  string           // what ClusterStatus reports
	generation int64            // and its generation
	down       bool             // every call answers unavailable
	identity   map[int]Identity // a member's own identity, overriding the cluster's
}

type fakeNode struct {
	seqsvrv1connect.UnimplementedStoreServiceHandler
	c *fakeCluster
	i int
}

func newFakeCluster(t *testing.T, n int) *fakeCluster {
	c := &fakeCluster{maxID: map[string]int64{"t": 0}, byReq: map[string]*seqsvrv1.Segment{}, calls: map[string]int{}, hang: -1}
	c.addrStyle = func(u string) string { return strings.TrimPrefix(u, "http://") }
	for i := range n {
		mux := http.NewServeMux()
		mux.Handle(seqsvrv1connect.NewStoreServiceHandler(&fakeNode{c: c, i: i}))
		srv := httptest.NewServer(mux)
		t.Cleanup(srv.Close)
		c.nodes = append(c.nodes, srv)
	}
	return c
}

func (c *fakeCluster) urls() []string {
	var u []string
	for _, n := range c.nodes {
		u = append(u, n.URL)
	}
	return u
}

func (c *fakeCluster) setLeader(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.leader = i
}

func (c *fakeCluster) count(node int, method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls[fmt.Sprintf("%d/%s", node, method)]
}

// enter records a call and refuses it unless this node leads.
func (n *fakeNode) enter(method string) error {
	n.c.calls[fmt.Sprintf("%d/%s", n.i, method)]++
	if n.c.leader != n.i || n.c.down {
		return connect.NewError(connect.CodeUnavailable, errors.New("not the leader"))
	}
	return nil
}

func (n *fakeNode) ClusterStatus(context.Context, *connect.Request[seqsvrv1.ClusterStatusRequest]) (*connect.Response[seqsvrv1.ClusterStatusResponse], error) {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	n.c.calls[fmt.Sprintf("%d/ClusterStatus", n.i)]++
	if n.c.down {
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("starting"))
	}
	res := &seqsvrv1.ClusterStatusResponse{NodeId: fmt.Sprint(n.i), ClusterId: n.c.clusterID, Generation: n.c.generation}
	if id, ok := n.c.identity[n.i]; ok {
		res.ClusterId, res.Generation = id.ClusterID, id.Generation
	}
	if n.c.leader >= 0 {
		res.LeaderId = fmt.Sprint(n.c.leader)
		res.LeaderHttpAddr = n.c.addrStyle(n.c.nodes[n.c.leader].URL)
	}
	return connect.NewResponse(res), nil
}

func (n *fakeNode) GetTag(_ context.Context, req *connect.Request[seqsvrv1.GetTagRequest]) (*connect.Response[seqsvrv1.Tag], error) {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if err := n.enter("GetTag"); err != nil {
		return nil, err
	}
	max, ok := n.c.maxID[req.Msg.GetTag()]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("tag %q", req.Msg.GetTag()))
	}
	return connect.NewResponse(&seqsvrv1.Tag{Tag: req.Msg.GetTag(), MaxId: max, Step: 10}), nil
}

func (n *fakeNode) ReserveSegment(ctx context.Context, req *connect.Request[seqsvrv1.ReserveSegmentRequest]) (*connect.Response[seqsvrv1.Segment], error) {
	n.c.mu.Lock()
	if n.c.hang == n.i {
		n.c.calls[fmt.Sprintf("%d/ReserveSegment", n.i)]++
		wake := n.c.wake
		n.c.mu.Unlock()
		<-wake // a paused member: no answer at all, whatever the deadline
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("woke up"))
	}
	defer n.c.mu.Unlock()
	if err := n.enter("ReserveSegment"); err != nil {
		return nil, err
	}
	m := req.Msg
	if m.GetSize() < 0 {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("negative size"))
	}
	if s, ok := n.c.byReq[m.GetRequestId()]; ok {
		return connect.NewResponse(s), nil
	}
	max, ok := n.c.maxID[m.GetTag()]
	if !ok {
		return nil, connect.NewError(connect.CodeNotFound, fmt.Errorf("tag %q", m.GetTag()))
	}
	size := m.GetSize()
	if size == 0 {
		size = 10
	}
	s := &seqsvrv1.Segment{Tag: m.GetTag(), First: max + 1, Last: max + size, Step: 10}
	n.c.maxID[m.GetTag()] = s.Last
	n.c.byReq[m.GetRequestId()] = s
	n.c.commits++
	if n.c.loseReply {
		n.c.loseReply = false
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("reply lost after commit"))
	}
	return connect.NewResponse(s), nil
}

func (n *fakeNode) RegisterWorker(_ context.Context, req *connect.Request[seqsvrv1.RegisterWorkerRequest]) (*connect.Response[seqsvrv1.Worker], error) {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if err := n.enter("RegisterWorker"); err != nil {
		return nil, err
	}
	return connect.NewResponse(&seqsvrv1.Worker{NodeId: req.Msg.GetNodeId(), WorkerId: 7}), nil
}

func (n *fakeNode) RenewWorker(_ context.Context, req *connect.Request[seqsvrv1.RenewWorkerRequest]) (*connect.Response[seqsvrv1.Worker], error) {
	n.c.mu.Lock()
	defer n.c.mu.Unlock()
	if err := n.enter("RenewWorker"); err != nil {
		return nil, err
	}
	if req.Msg.GetWorkerId() != 7 {
		return nil, connect.NewError(connect.CodeFailedPrecondition, errors.New("lease lost"))
	}
	return connect.NewResponse(&seqsvrv1.Worker{NodeId: req.Msg.GetNodeId(), WorkerId: 7}), nil
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// testClient's attempts get 10 s: on a loaded machine (-race, 2 cores, other
// tests running) a 1 s attempt can time out, and the retry it causes
// breaks tests that count calls, connections or who was asked.
func testClient(t *testing.T, urls []string) *Client {
	t.Helper()
	c, err := New(urls, Options{
		RequestTimeout: 10 * time.Second, BackoffInitial: time.Millisecond, BackoffMax: 10 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientFindsAndFollowsLeader(t *testing.T) {
	ctx := testCtx(t)
	fc := newFakeCluster(t, 3)
	fc.setLeader(1)
	c := testClient(t, fc.urls())

	s, err := c.ReserveSegment(ctx, "t", 5, "r1")
	if err != nil || s.GetFirst() != 1 || s.GetLast() != 5 {
		t.Fatalf("reserve: %v %v", s, err)
	}
	if c.Leader() != fc.nodes[1].URL {
		t.Fatalf("leader %q, want %q", c.Leader(), fc.nodes[1].URL)
	}
	if n := fc.count(0, "ReserveSegment") + fc.count(2, "ReserveSegment"); n != 0 {
		t.Fatalf("%d reservations sent to followers before the leader was known", n)
	}

	fc.setLeader(2)
	s, err = c.ReserveSegment(ctx, "t", 5, "r2")
	if err != nil || s.GetFirst() != 6 {
		t.Fatalf("reserve after leader change: %v %v", s, err)
	}
	if c.Leader() != fc.nodes[2].URL {
		t.Fatalf("leader %q after change, want %q", c.Leader(), fc.nodes[2].URL)
	}
	if w, err := c.RegisterWorker(ctx, &seqsvrv1.RegisterWorkerRequest{NodeId: "n"}); err != nil || w.GetWorkerId() != 7 {
		t.Fatalf("register: %v %v", w, err)
	}
	if w, err := c.RenewWorker(ctx, &seqsvrv1.RenewWorkerRequest{NodeId: "n", WorkerId: 7}); err != nil || w.GetWorkerId() != 7 {
		t.Fatalf("renew: %v %v", w, err)
	}
	if cs, err := c.ClusterStatus(ctx); err != nil || cs.GetLeaderId() != "2" {
		t.Fatalf("cluster status: %v %v", cs, err)
	}
}

// A cluster ID other than the one known, of a higher generation, is
// reported once to every OnClusterChange hook, with both IDs; the first
// ID learned and the same ID again are not changes.
func TestClientReportsClusterChange(t *testing.T) {
	ctx := testCtx(t)
	fc := newFakeCluster(t, 2)
	fc.setLeader(0)
	fc.clusterID = "old"
	c := testClient(t, fc.urls())
	var mu sync.Mutex
	var got []string
	for i := range 2 {
		c.OnClusterChange(func(was, now string) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, fmt.Sprintf("%d:%s->%s", i, was, now))
		})
	}
	changes := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
	for range 2 {
		if _, err := c.ClusterStatus(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if c.ClusterID() != "old" || len(changes()) != 0 {
		t.Fatalf("cluster ID %q, changes %v; want old and none", c.ClusterID(), changes())
	}
	fc.mu.Lock()
	fc.clusterID, fc.generation = "new", 1_800_000_000_000
	fc.mu.Unlock()
	for range 2 {
		if _, err := c.ClusterStatus(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"0:old->new", "1:old->new"}
	poll.Until(t, 10*time.Second, "both hooks called", func() bool { return len(changes()) >= len(want) })
	if c.ClusterID() != "new" || !slices.Equal(changes(), want) {
		t.Fatalf("cluster ID %q, changes %v; want new and %v", c.ClusterID(), changes(), want)
	}
}

func TestClientUnspecifiedLeaderHost(t *testing.T) {
	ctx := testCtx(t)
	fc := newFakeCluster(t, 2)
	fc.addrStyle = func(u string) string { // "0.0.0.0:PORT", as a member bound to all interfaces says
		return "0.0.0.0:" + u[strings.LastIndex(u, ":")+1:]
	}
	fc.setLeader(1)
	c := testClient(t, fc.urls())
	if _, err := c.GetTag(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	if c.Leader() != fc.nodes[1].URL {
		t.Fatalf("leader %q, want %q", c.Leader(), fc.nodes[1].URL)
	}
}

func TestClientRetryKeepsRequestID(t *testing.T) {
	ctx := testCtx(t)
	fc := newFakeCluster(t, 3)
	fc.setLeader(0)
	c := testClient(t, fc.urls())
	fc.mu.Lock()
	fc.loseReply = true
	fc.mu.Unlock()
	s, err := c.ReserveSegment(ctx, "t", 10, "") // empty: the client makes one up
	if err != nil {
		t.Fatal(err)
	}
	fc.mu.Lock()
	commits := fc.commits
	fc.mu.Unlock()
	if commits != 1 || s.GetFirst() != 1 || s.GetLast() != 10 {
		t.Fatalf("after a lost reply: %d commits, segment %v; want 1 commit of [1,10]", commits, s)
	}
}

func TestClientErrorsKeepCodes(t *testing.T) {
	ctx := testCtx(t)
	fc := newFakeCluster(t, 1)
	fc.setLeader(0)
	c := testClient(t, fc.urls())

	_, err := c.GetTag(ctx, "missing")
	if !errors.Is(err, errs.NotFound) || connect.CodeOf(err) != connect.CodeNotFound ||
		connect.CodeOf(errs.Connect(err)) != connect.CodeNotFound {
		t.Fatalf("unknown tag: %v (code %v)", err, connect.CodeOf(err))
	}
	_, err = c.ReserveSegment(ctx, "t", -1, "x")
	if !errors.Is(err, errs.InvalidArgument) || connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("negative size: %v", err)
	}
	_, err = c.RenewWorker(ctx, &seqsvrv1.RenewWorkerRequest{NodeId: "n", WorkerId: 8})
	if !errors.Is(err, errs.FailedPrecondition) || connect.CodeOf(errs.Connect(err)) != connect.CodeFailedPrecondition {
		t.Fatalf("lost lease: %v", err)
	}
	if n := fc.count(0, "GetTag"); n != 1 {
		t.Fatalf("not_found was retried: %d calls", n)
	}
}

func TestClientNoLeaderGivesUpWithUnavailable(t *testing.T) {
	fc := newFakeCluster(t, 3)
	fc.setLeader(-1)
	// The budget must hold two attempts even on a loaded machine, where the
	// first (a dial, ClusterStatus, ReserveSegment) took over 100 ms.
	c, err := New(fc.urls(), Options{
		BackoffInitial: time.Millisecond, BackoffMax: 5 * time.Millisecond, RetryBudget: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	outer := testCtx(t)
	_, err = c.ReserveSegment(context.Background(), "t", 1, "r") // no deadline: RetryBudget bounds it
	if !errors.Is(err, errs.Unavailable) || connect.CodeOf(errs.Connect(err)) != connect.CodeUnavailable {
		t.Fatalf("no leader: %v", err)
	}
	if outer.Err() != nil {
		t.Fatal("no-leader call ran past the test deadline")
	}
	tries := fc.count(0, "ReserveSegment") + fc.count(1, "ReserveSegment") + fc.count(2, "ReserveSegment")
	if tries < 2 {
		t.Fatalf("%d attempts, want retries", tries)
	}
}

func TestClientAllDownAndDeadMember(t *testing.T) {
	fc := newFakeCluster(t, 1)
	fc.setLeader(0)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()

	c := testClient(t, []string{deadURL, fc.nodes[0].URL})
	if _, err := c.ReserveSegment(testCtx(t), "t", 1, "r"); err != nil {
		t.Fatalf("one dead member in the list: %v", err)
	}

	c = testClient(t, []string{deadURL})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.GetTag(ctx, "t")
	if !errors.Is(err, errs.Unavailable) {
		t.Fatalf("all down: %v, want errs.Unavailable", err)
	}
}

func TestNewBadURLs(t *testing.T) {
	for _, urls := range [][]string{nil, {""}, {"ftp://x"}, {"http://"}} {
		if _, err := New(urls, Options{}); !errors.Is(err, errs.InvalidArgument) {
			t.Errorf("%q: %v, want errs.InvalidArgument", urls, err)
		}
	}
	c, err := New([]string{"127.0.0.1:1", " http://h:2/ "}, Options{})
	if err != nil || c.urls[0].String() != "http://127.0.0.1:1" || c.urls[1].String() != "http://h:2" {
		t.Fatalf("normalised: %v %v", c, err)
	}
}

// The allocator over the real client over HTTP, through a leader change.
func TestSegmentAllocatorOverClient(t *testing.T) {
	ctx := testCtx(t)
	fc := newFakeCluster(t, 3)
	fc.setLeader(0)
	// EmptyWait generous: the load after the leader change goes through
	// the real client, which took over the default 500 ms under load.
	a := segment.New(testClient(t, fc.urls()), segment.Config{EmptyWait: 10 * time.Second})
	t.Cleanup(a.Close)
	var last int64
	for i := range 300 {
		if i == 100 {
			fc.setLeader(2)
		}
		ids, err := a.NextIDs(ctx, "t", 1)
		if err != nil {
			t.Fatalf("id %d: %v", i, err)
		}
		id := ids[0]
		if id <= last {
			t.Fatalf("id %d after %d", id, last)
		}
		last = id
	}
	if _, err := a.NextIDs(ctx, "missing", 1); !errors.Is(err, errs.NotFound) {
		t.Fatalf("unknown tag over the client: %v", err)
	}
}

// TestClientForgetsLeaderThatHung: an attempt the caller's own deadline
// cut short (a paused leader) still makes the client look for the leader
// again, so the next call does not go to the hung member.
func TestClientForgetsLeaderThatHung(t *testing.T) {
	fc := newFakeCluster(t, 3)
	fc.setLeader(1)
	c := testClient(t, fc.urls())
	if _, err := c.ReserveSegment(testCtx(t), "t", 5, "r1"); err != nil {
		t.Fatal(err)
	}
	wake := make(chan struct{})
	t.Cleanup(func() { close(wake) }) // before the servers close
	fc.mu.Lock()
	fc.hang, fc.wake, fc.leader = 1, wake, 2 // 1 paused; 2 elected
	fc.mu.Unlock()
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.ReserveSegment(short, "t", 5, "r2"); err == nil {
		t.Fatal("a call answered by a hung member")
	}
	before := fc.count(1, "ReserveSegment")
	if s, err := c.ReserveSegment(testCtx(t), "t", 5, "r3"); err != nil || s.GetFirst() != 6 {
		t.Fatalf("next call: %v %v", s, err)
	}
	if n := fc.count(1, "ReserveSegment") - before; n != 0 {
		t.Fatalf("the next call went to the hung member %d time(s)", n)
	}
}

// A leader that names an address this client cannot resolve (a pod's DNS
// name, seen from outside the cluster's network) is passed over: the
// call goes to the listed members in turn, one of which is the leader
// under the address the client was given.
func TestClientPassesOverUnreachableLeaderAddress(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fc := newFakeCluster(t, 3)
	fc.addrStyle = func(string) string { return "storesvr-1.storesvr.seqsvr.invalid:8081" }
	fc.setLeader(1)
	c := testClient(t, fc.urls())
	s, err := c.ReserveSegment(ctx, "t", 5, "r1")
	if err != nil || s.GetFirst() != 1 {
		t.Fatalf("reserve with the leader's own address unresolvable: %v %v", s, err)
	}
	if n := fc.count(1, "ReserveSegment"); n != 1 {
		t.Fatalf("leader got %d reservations through its listed URL, want 1", n)
	}
}
