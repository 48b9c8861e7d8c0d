package storage

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/spec"
)

func TestClusterForwarding(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitForLeader()
	f := c.followers(leader)[0].client()
	ctx := context.Background()

	tag, err := f.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "fwd", Start: 10, Step: 5, Description: "d"}))
	if err != nil {
		t.Fatalf("create through follower: %v", err)
	}
	if tag.Msg.GetMaxId() != 10 || tag.Msg.GetStep() != 5 {
		t.Fatalf("tag %v", tag.Msg)
	}
	seg, err := f.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "fwd", RequestId: "q1"}))
	if err != nil || seg.Msg.GetFirst() != 11 || seg.Msg.GetLast() != 15 || seg.Msg.GetStep() != 5 {
		t.Fatalf("reserve through follower: %v %v", seg, err)
	}
	got, err := leader.client().GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "fwd"}))
	if err != nil || got.Msg.GetMaxId() != 15 {
		t.Fatalf("leader sees %v %v", got, err)
	}
	if got, err := f.GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "fwd"})); err != nil || got.Msg.GetMaxId() != 15 {
		t.Fatalf("read through follower: %v %v", got, err)
	}
	list, err := f.ListTags(ctx, connect.NewRequest(&seqsvrv1.ListTagsRequest{}))
	if err != nil || len(list.Msg.GetTags()) != 1 {
		t.Fatalf("list through follower: %v %v", list, err)
	}
	w, err := f.RegisterWorker(ctx, connect.NewRequest(&seqsvrv1.RegisterWorkerRequest{NodeId: "alloc-1", NowMs: time.Now().UnixMilli()}))
	if err != nil || w.Msg.GetInstanceId() == "" || w.Msg.GetLayout().GetWorkerBits() != spec.DefaultWorkerBits || w.Msg.GetLeaseTtlMs() != spec.DefaultWorkerLeaseTTL.Milliseconds() {
		t.Fatalf("register through follower: %v %v", w, err)
	}
	if _, err := f.RenewWorker(ctx, connect.NewRequest(&seqsvrv1.RenewWorkerRequest{NodeId: "alloc-1", WorkerId: w.Msg.GetWorkerId(),
		InstanceId: w.Msg.GetInstanceId(), NowMs: time.Now().UnixMilli()})); err != nil {
		t.Fatalf("renew through follower: %v", err)
	}

	// The first leader recorded every bootstrap peer's HTTP address in the
	// FSM, so members that joined later can forward too.
	for _, n := range c.nodes {
		for _, m := range c.nodes {
			poll.Until(t, 5*time.Second, "member addresses in "+n.id+"'s FSM", func() bool {
				info := n.store.fsm.Member(m.id)
				return info != nil && info.GetHttpAddr() == m.httpAddr() && info.GetRaftAddr() == string(m.addr)
			})
		}
	}

	// The leader's error codes come through unchanged.
	for name, call := range map[string]func() error{
		"already_exists": func() error {
			_, err := f.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "fwd"}))
			return err
		},
		"not_found": func() error {
			_, err := f.GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "missing"}))
			return err
		},
		"invalid_argument": func() error {
			_, err := f.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "fwd", Size: -3}))
			return err
		},
		"failed_precondition": func() error {
			_, err := f.RegisterWorker(ctx, connect.NewRequest(&seqsvrv1.RegisterWorkerRequest{NodeId: "alloc-1", NowMs: time.Now().UnixMilli(), InstanceId: "twin"}))
			return err
		},
	} {
		if got := connectCode(call()); got != name {
			t.Errorf("%s: got code %s", name, got)
		}
	}
	// A request already forwarded once is not forwarded again.
	req := connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "fwd"})
	req.Header().Set(ForwardedHeader, "1")
	if _, err := f.GetTag(ctx, req); connectCode(err) != "unavailable" {
		t.Fatalf("twice-forwarded read: %v", err)
	}
	// Cluster status answered locally by the follower, naming the leader.
	st, err := f.ClusterStatus(ctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
	if err != nil || st.Msg.GetLeaderId() != leader.id || st.Msg.GetLeaderHttpAddr() != leader.httpAddr() || len(st.Msg.GetMembers()) != 3 {
		t.Fatalf("status %v %v", st, err)
	}
	for _, m := range st.Msg.GetMembers() {
		if m.GetSuffrage() != "voter" || m.GetHttpAddr() == "" || (m.GetId() == leader.id) != (m.GetState() == "leader") {
			t.Errorf("member %v", m)
		}
	}
}

// reserveLoop reserves from tag through random members until stop, retrying
// a failed attempt with the same request_id, and records every success.
type ackLog struct {
	mu   sync.Mutex
	segs map[string]*seqsvrv1.Segment
}

func (a *ackLog) add(t *testing.T, id string, s *seqsvrv1.Segment) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if prev, ok := a.segs[id]; ok && (prev.GetFirst() != s.GetFirst() || prev.GetLast() != s.GetLast()) {
		t.Errorf("request %s answered twice differently: %v then %v", id, prev, s)
	}
	a.segs[id] = s
}

func TestClusterLeaderLossDuringConcurrentReservations(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitForLeader()
	ctx := context.Background()
	if _, err := leader.client().CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "t", Step: 7})); err != nil {
		t.Fatal(err)
	}
	acks := &ackLog{segs: map[string]*seqsvrv1.Segment{}}
	var stop atomic.Bool
	var total atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				id := fmt.Sprintf("g%d-%d", g, i)
				for attempt := 0; !stop.Load(); attempt++ {
					var live []*testNode
					for _, n := range c.nodes {
						if !n.stopped.Load() {
							live = append(live, n)
						}
					}
					n := live[(g+i+attempt)%len(live)]
					cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
					res, err := n.client().ReserveSegment(cctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t", RequestId: id}))
					cancel()
					if err == nil {
						acks.add(t, id, res.Msg)
						total.Add(1)
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
		}(g)
	}
	poll.Until(t, 20*time.Second, "reservations before the kill", func() bool { return total.Load() >= 40 })
	before := total.Load()
	leader.stop() // the leader dies mid-stream
	c.waitForLeader()
	poll.Until(t, 20*time.Second, "reservations after the kill", func() bool { return total.Load() >= before+40 })
	stop.Store(true)
	wg.Wait()

	segs := make([]*seqsvrv1.Segment, 0, len(acks.segs))
	var top int64
	for _, s := range acks.segs {
		segs = append(segs, s)
		top = max(top, s.GetLast())
	}
	sort.Slice(segs, func(i, j int) bool { return segs[i].GetFirst() < segs[j].GetFirst() })
	for i := 1; i < len(segs); i++ {
		if segs[i].GetFirst() <= segs[i-1].GetLast() {
			t.Fatalf("overlapping segments %v and %v", segs[i-1], segs[i])
		}
	}
	// Every acknowledged segment is below max_id on every surviving member.
	for _, n := range c.live() {
		poll.Until(t, 10*time.Second, "member "+n.id+" to catch up", func() bool { return n.store.fsm.Tag("t").GetMaxId() >= top })
	}
	t.Logf("%d acknowledged segments, top %d", len(segs), top)
}

func TestClusterLeaderPartition(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	old := c.waitForLeader()
	ctx := context.Background()
	if _, err := old.store.createTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "p", Step: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := old.store.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "p"}); err != nil {
		t.Fatal(err)
	}
	// Cut the leader off in both directions.
	old.trans.DisconnectAll()
	rest := c.followers(old)
	for _, n := range rest {
		n.trans.Disconnect(old.addr)
	}
	// The old leader cannot acknowledge a write nor a linearizable read.
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, werr := old.store.reserveSegment(cctx, &seqsvrv1.ReserveSegmentRequest{Tag: "p", RequestId: "lost"})
	cancel()
	if werr == nil {
		t.Fatal("a partitioned leader acknowledged a reservation")
	}
	if _, err := old.store.getTag(ctx, &seqsvrv1.GetTagRequest{Tag: "p"}); err == nil {
		t.Fatal("a partitioned leader served a linearizable read")
	}
	// The majority elects a new leader and goes on.
	nl := c.waitForLeader(rest...)
	seg, err := nl.store.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "p", RequestId: "after"})
	if err != nil || seg.GetFirst() != 11 && seg.GetFirst() != 21 {
		t.Fatalf("new leader reserve: %v %v", seg, err)
	}
	// Heal: the old leader rejoins as a follower and converges.
	connectAll(c.nodes)
	leader := c.waitForLeader()
	want := leader.store.fsm.Tag("p").GetMaxId()
	for _, n := range c.nodes {
		poll.Until(t, 10*time.Second, "convergence of "+n.id, func() bool { return n.store.fsm.Tag("p").GetMaxId() == want })
	}
	// Whatever happened to "lost", a retry is answered consistently.
	r1, err1 := leader.store.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "p", RequestId: "lost"})
	r2, err2 := leader.store.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "p", RequestId: "lost"})
	if err1 != nil || err2 != nil || r1.GetFirst() != r2.GetFirst() || r1.GetFirst() <= seg.GetLast() && r1.GetLast() >= seg.GetFirst() {
		t.Fatalf("retry after heal: %v %v / %v %v (after=%v)", r1, err1, r2, err2, seg)
	}
}

func TestClusterJoinAndRemove(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	leader := c.waitForLeader()
	ctx := context.Background()
	if _, err := leader.store.createTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "j", Start: 42}); err != nil {
		t.Fatal(err)
	}
	n4 := newTestNode(t)
	n4.id = "n4"
	c.nodes = append(c.nodes, n4)
	connectAll(c.nodes)
	cfg := testConfig("n4", "", "")
	cfg.Join = c.followers(leader)[0].httpAddr() // joins through a follower: forwarded
	n4.start(t, cfg)
	poll.Until(t, 15*time.Second, "n4 to join and catch up", func() bool {
		return n4.store.Ready(ctx) == nil && n4.store.fsm.Tag("j").GetMaxId() == 42
	})
	st, err := n4.client().ClusterStatus(ctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
	if err != nil || len(st.Msg.GetMembers()) != 4 {
		t.Fatalf("status after join: %v %v", st, err)
	}
	// n4 can forward too: it learned the leader's address from the FSM.
	if _, err := n4.client().ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "j", Size: 1})); err != nil {
		t.Fatalf("reserve through the joined member: %v", err)
	}
	// Adding again is idempotent.
	if _, err := leader.client().AddMember(ctx, connect.NewRequest(&seqsvrv1.AddMemberRequest{Id: "n4", RaftAddr: string(n4.addr), HttpAddr: n4.httpAddr()})); err != nil {
		t.Fatalf("re-add: %v", err)
	}
	res, err := n4.client().RemoveMember(ctx, connect.NewRequest(&seqsvrv1.RemoveMemberRequest{Id: "n4"}))
	if err != nil || len(res.Msg.GetMembers()) != 3 {
		t.Fatalf("remove: %v %v", res, err)
	}
	if leader.store.fsm.Member("n4") != nil {
		t.Fatal("removed member's address still recorded")
	}
	if _, err := leader.client().AddMember(ctx, connect.NewRequest(&seqsvrv1.AddMemberRequest{Id: "x"})); connectCode(err) != "invalid_argument" {
		t.Fatalf("bad add: %v", err)
	}
}
