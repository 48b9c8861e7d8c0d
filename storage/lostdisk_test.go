package storage

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// diskNode is a testNode whose raft stores outlive a stop, so a test can
// restart it with its data, or throw them away (a lost disk).
type diskNode struct {
	*testNode
	logs   *raft.InmemStore
	stable *raft.InmemStore
	cfg    Config
	all    *[]*diskNode
	record *syncBuffer // the member's log, for what a test cannot see otherwise
}

func newDiskCluster(t *testing.T, n int) []*diskNode {
	t.Helper()
	skipShort(t)
	var nodes []*diskNode
	var tns []*testNode
	for i := range n {
		tn := newTestNode(t)
		tn.id = "n" + string(rune('1'+i))
		tns = append(tns, tn)
		nodes = append(nodes, &diskNode{testNode: tn, logs: raft.NewInmemStore(), stable: raft.NewInmemStore()})
	}
	for _, d := range nodes {
		d.all = &nodes
	}
	connectAll(tns)
	var peers []Peer
	for _, d := range nodes {
		peers = append(peers, Peer{ID: d.id, RaftAddr: string(d.addr), HTTPAddr: d.httpAddr()})
	}
	for _, d := range nodes {
		d.cfg = testConfig(d.id, "", "")
		d.cfg.Peers = peers
		d.record = &syncBuffer{}
		d.cfg.Logger = slog.New(slog.NewTextHandler(d.record, nil))
		t.Cleanup(func() { d.stop() })
	}
	return nodes
}

// startAsync opens the member in the background; the channel gets Open's
// error.
func (d *diskNode) startAsync() <-chan error {
	// Raft's shutdown closed the in-memory transport, which forgets its
	// peers: a restarted process is reachable again.
	for _, o := range *d.all {
		if o != d {
			o.trans.Connect(d.addr, d.trans)
			d.trans.Connect(o.addr, o.trans)
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- d.startErr(d.cfg, memParts(d.logs, d.stable)) }()
	return errc
}

func (d *diskNode) mustStart(t *testing.T) {
	t.Helper()
	if err := <-d.startAsync(); err != nil {
		t.Fatal(err)
	}
}

// wipe loses the member's disk: its log and stable store are new.
func (d *diskNode) wipe() { d.logs, d.stable = raft.NewInmemStore(), raft.NewInmemStore() }

// pause is SIGSTOP as far as the others can tell: no Raft traffic, no
// answer on HTTP. resume undoes it.
func (d *diskNode) pause(all []*diskNode) {
	d.handler.Store(nil)
	for _, o := range all {
		if o != d {
			o.trans.Disconnect(d.addr)
			d.trans.Disconnect(o.addr)
		}
	}
}

func (d *diskNode) resume(all []*diskNode) {
	_, h := seqsvrv1connect.NewStoreServiceHandler(d.store.Service())
	d.handler.Store(&h)
	for _, o := range all {
		if o != d {
			o.trans.Connect(d.addr, d.trans)
			d.trans.Connect(o.addr, o.trans)
		}
	}
}

func startDisk(t *testing.T, nodes []*diskNode) {
	t.Helper()
	var errcs []<-chan error
	for _, d := range nodes {
		errcs = append(errcs, d.startAsync())
	}
	for _, errc := range errcs {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}

func leaderOf(t *testing.T, nodes ...*diskNode) *diskNode {
	t.Helper()
	var tns []*testNode
	for _, d := range nodes {
		tns = append(tns, d.testNode)
	}
	l := (&testCluster{t: t}).waitForLeader(tns...)
	for _, d := range nodes {
		if d.testNode == l {
			return d
		}
	}
	return nil
}

func suffrageOf(s *Store, id string) string {
	cf := s.raft.GetConfiguration()
	if cf.Error() != nil {
		return ""
	}
	for _, srv := range cf.Configuration().Servers {
		if string(srv.ID) == id {
			return strings.ToLower(srv.Suffrage.String())
		}
	}
	return "absent"
}

// TestLostDiskVoterNeverHandsOutTwice is the textbook way to break Raft,
// as an operator meets it: a follower is paused, 40 segments are
// acknowledged by the leader and the other follower, that follower loses
// its disk, the leader dies, and the wiped member restarts with its usual
// --peers beside the paused one. A member that bootstrapped again would
// vote the paused one, which lacks the 40 segments, into leadership and
// the next reservation would start at 1 again. The wiped member must wait
// until the cluster can take it back, and no ID may be answered twice.
func TestLostDiskVoterNeverHandsOutTwice(t *testing.T) {
	nodes := newDiskCluster(t, 3)
	startDisk(t, nodes)
	leader := leaderOf(t, nodes...)
	ctx := context.Background()
	if _, err := leader.store.createTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "ids", Step: 100}); err != nil {
		t.Fatal(err)
	}
	var fs []*diskNode
	for _, d := range nodes {
		if d != leader {
			fs = append(fs, d)
		}
	}
	paused, wiped := fs[0], fs[1]
	// The paused member holds the tag but none of the segments.
	poll.Until(t, 10*time.Second, "the tag on every member", func() bool { return paused.store.fsm.Tag("ids") != nil })
	paused.pause(nodes)
	var acked int64
	for range 40 {
		seg, err := leader.store.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "ids"})
		if err != nil {
			t.Fatal(err)
		}
		acked = seg.GetLast()
	}
	wiped.stop()
	wiped.wipe()
	leader.stop()

	wipedUp := wiped.startAsync()
	paused.resume(nodes)
	// Neither can lead: the wiped member has not started raft (there is
	// no leader to take it back), and it would not vote if it had.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if paused.store.raft.State() == raft.Leader {
			seg, err := paused.store.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "ids"})
			t.Fatalf("the paused member, without the 40 acknowledged segments, became leader: reserved %v (%v); acknowledged up to %d", seg, err, acked)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-wipedUp:
		t.Fatalf("the wiped member started (%v) while no leader could take it back", err)
	default:
	}
	// The old leader comes back with its data: the cluster takes the
	// wiped member back, catches it up, promotes it.
	leader.mustStart(t)
	if err := <-wipedUp; err != nil {
		t.Fatal(err)
	}
	l := leaderOf(t, nodes...)
	seg, err := l.store.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "ids"})
	if err != nil {
		t.Fatal(err)
	}
	if seg.GetFirst() <= acked {
		t.Fatalf("reserved %d..%d after %d was acknowledged", seg.GetFirst(), seg.GetLast(), acked)
	}
	poll.Until(t, 15*time.Second, "the wiped member promoted back to voter", func() bool {
		return suffrageOf(l.store, wiped.id) == "voter"
	})
	if got := wiped.store.fsm.Tag("ids").GetMaxId(); got < acked {
		t.Fatalf("the re-admitted member holds max_id %d, acknowledged %d", got, acked)
	}
}

// TestLostDiskRejoinsByItself: with the other two members running, a
// member that lost its disk and restarts with its usual flags (--peers,
// then --join at the same address) is removed, added back as a
// non-voter, caught up and promoted, with nothing done by hand.
func TestLostDiskRejoinsByItself(t *testing.T) {
	for _, mode := range []string{"peers", "join"} {
		t.Run(mode, func(t *testing.T) {
			nodes := newDiskCluster(t, 3)
			startDisk(t, nodes)
			leader := leaderOf(t, nodes...)
			ctx := context.Background()
			if _, err := leader.store.createTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "r", Start: 77}); err != nil {
				t.Fatal(err)
			}
			var wiped *diskNode
			for _, d := range nodes {
				if d != leader {
					wiped = d
				}
			}
			wiped.stop()
			wiped.wipe()
			if mode == "join" {
				wiped.cfg.Peers, wiped.cfg.Join = nil, leader.httpAddr()
			}
			wiped.mustStart(t)
			if got := suffrageOf(leader.store, wiped.id); got != "nonvoter" && got != "voter" {
				t.Fatalf("after its start the wiped member is %s", got)
			}
			poll.Until(t, 15*time.Second, "the wiped member caught up and promoted", func() bool {
				return suffrageOf(leader.store, wiped.id) == "voter" && wiped.store.fsm.Tag("r").GetMaxId() == 77
			})
			// The stale identity was removed, the member added back as a
			// non-voter, then promoted: a voter entry left in place would
			// have made it a voter at once, on an empty log.
			// Whichever member led at each step logged it (an election
			// under load moves the leader). A line is written once its
			// change has committed, which the configuration shows first:
			// it may come a moment after the poll above ended.
			for _, want := range []string{"removing its old entry", "member re-added as a non-voter", "promoted a caught-up non-voter"} {
				poll.Until(t, 10*time.Second, "a leader logged "+want, func() bool {
					for _, d := range nodes {
						if strings.Contains(d.record.String(), want) {
							return true
						}
					}
					return false
				})
			}
			// It counts toward a quorum again, and votes.
			leader.stop()
			var live []*diskNode
			for _, d := range nodes {
				if d != leader {
					live = append(live, d)
				}
			}
			l := leaderOf(t, live...)
			if _, err := l.store.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "r"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestVoteGateWithholdsVotes: a member that lost its state answers no
// RequestVote and no pre-vote until its commit index reached the gate's
// index, then answers them as raft does.
func TestVoteGateWithholdsVotes(t *testing.T) {
	addr, inner := raft.NewInmemTransportWithTimeout("", time.Second)
	candAddr, cand := raft.NewInmemTransportWithTimeout("", time.Second)
	cand.Connect(addr, inner)
	g, err := newVoteGate(inner, 10, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var served atomic.Int64
	go func() {
		for rpc := range g.Consumer() {
			served.Add(1)
			switch rpc.Command.(type) {
			case *raft.RequestVoteRequest:
				rpc.Respond(&raft.RequestVoteResponse{Granted: true}, nil)
			case *raft.RequestPreVoteRequest:
				rpc.Respond(&raft.RequestPreVoteResponse{Granted: true}, nil)
			default:
				rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
			}
		}
	}()
	vote := func() (bool, error) {
		var resp raft.RequestVoteResponse
		err := cand.RequestVote("x", addr, &raft.RequestVoteRequest{RPCHeader: raft.RPCHeader{ID: []byte("c"), Addr: []byte(candAddr)}, Term: 5}, &resp)
		return resp.Granted, err
	}
	preVote := func() (bool, error) {
		var resp raft.RequestPreVoteResponse
		err := cand.RequestPreVote("x", addr, &raft.RequestPreVoteRequest{RPCHeader: raft.RPCHeader{ID: []byte("c"), Addr: []byte(candAddr)}, Term: 5}, &resp)
		return resp.Granted, err
	}
	if granted, err := vote(); granted || err == nil || !strings.Contains(err.Error(), "vote withheld") {
		t.Fatalf("closed gate: vote granted %v, err %v", granted, err)
	}
	if granted, err := preVote(); granted || err == nil || strings.Contains(err.Error(), "unexpected command") {
		// raft counts a pre-vote refused with "unexpected command" as granted.
		t.Fatalf("closed gate: pre-vote granted %v, err %v", granted, err)
	}
	var resp raft.AppendEntriesResponse
	if err := cand.AppendEntries("x", addr, &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("c"), Addr: []byte(candAddr)}, Term: 5}, &resp); err != nil || !resp.Success {
		t.Fatalf("closed gate: append entries %v %v", resp, err)
	}
	g.open()
	if granted, err := vote(); !granted || err != nil {
		t.Fatalf("open gate: vote granted %v, err %v", granted, err)
	}
	if granted, err := preVote(); !granted || err != nil {
		t.Fatalf("open gate: pre-vote granted %v, err %v", granted, err)
	}
	if served.Load() != 3 {
		t.Fatalf("%d RPCs reached raft, want 3 (append entries and the two votes after the gate opened)", served.Load())
	}
}

// TestEmptyMembersStartTogether: members on empty data dirs started at
// once with --peers, in either order and with one late, all come up in
// one cluster.
func TestEmptyMembersStartTogether(t *testing.T) {
	t.Run("two at once", func(t *testing.T) {
		nodes := newDiskCluster(t, 2)
		startDisk(t, nodes)
		leaderOf(t, nodes...)
	})
	for _, order := range [][]int{{0, 1, 2}, {2, 1, 0}} {
		t.Run("staggered", func(t *testing.T) {
			nodes := newDiskCluster(t, 3)
			var errcs []<-chan error
			for _, i := range order {
				errcs = append(errcs, nodes[i].startAsync())
				time.Sleep(300 * time.Millisecond)
			}
			for _, errc := range errcs {
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
			}
			l := leaderOf(t, nodes...)
			poll.Until(t, 15*time.Second, "three voters", func() bool {
				for _, d := range nodes {
					if suffrageOf(l.store, d.id) != "voter" {
						return false
					}
				}
				return true
			})
		})
	}
}

// TestEmptyMemberWaitsAndSaysWhy: a member without state whose peers
// cannot be reached starts no raft, says why in MemberProbe and
// readiness, and gives up when its context ends.
func TestEmptyMemberWaitsAndSaysWhy(t *testing.T) {
	skipShort(t)
	n := newTestNode(t)
	n.id = "solo"
	cfg := testConfig("solo", "", "")
	cfg.Peers = []Peer{{ID: "solo", RaftAddr: string(n.addr), HTTPAddr: n.httpAddr()}, {ID: "gone", RaftAddr: "gone:1", HTTPAddr: "127.0.0.1:1"}}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- n.startCtx(ctx, cfg, memParts(raft.NewInmemStore(), raft.NewInmemStore())) }()
	var probe *seqsvrv1.MemberProbeResponse
	poll.Until(t, 10*time.Second, "a waiting answer naming the unreachable peer", func() bool {
		res, err := n.client().MemberProbe(context.Background(), connect.NewRequest(&seqsvrv1.MemberProbeRequest{}))
		if err != nil {
			return false
		}
		probe = res.Msg
		return probe.GetPhase() == phaseWaiting && strings.Contains(probe.GetWaitingFor(), "gone@127.0.0.1:1")
	})
	if probe.GetClusterExists() || probe.GetNodeId() != "solo" {
		t.Fatalf("waiting probe: %v", probe)
	}
	if err := (*n.waitingReady.Load())(context.Background()); !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "unreachable") {
		t.Fatalf("readiness while waiting: %v", err)
	}
	// Everything else is not served while waiting.
	if _, err := n.client().ClusterStatus(context.Background(), connect.NewRequest(&seqsvrv1.ClusterStatusRequest{})); err == nil {
		t.Fatal("ClusterStatus answered by a member that has not started raft")
	}
	cancel()
	if err := <-errc; !errors.Is(err, errs.Unavailable) {
		t.Fatalf("open after its context ended: %v", err)
	}
}

// TestMemberProbeRunning: a running member reports its configuration,
// and a cluster once it holds anything beyond the bootstrap
// configuration.
func TestMemberProbeRunning(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	l := c.waitForLeader()
	res, err := c.followers(l)[0].client().MemberProbe(context.Background(), connect.NewRequest(&seqsvrv1.MemberProbeRequest{FromId: "x"}))
	if err != nil {
		t.Fatal(err)
	}
	p := res.Msg
	if p.GetPhase() != phaseRunning || !p.GetClusterExists() || len(p.GetMembers()) != 3 || p.GetLeaderId() != l.id || p.GetLeaderHttpAddr() != l.httpAddr() {
		t.Fatalf("probe of a running member: %v", p)
	}
}

// TestRejoinedMemberWithholdsVoteUntilCaughtUp: a member taken back
// without its state runs raft before any entry reached it. A stale
// member that still counts its old identity as a voter asks it for a
// vote then: it must not get one (an empty log passes raft's up-to-date
// check, and an empty configuration lets any candidate through), until
// the member has caught up to where it was re-admitted.
func TestRejoinedMemberWithholdsVoteUntilCaughtUp(t *testing.T) {
	nodes := newDiskCluster(t, 3)
	startDisk(t, nodes)
	leader := leaderOf(t, nodes...)
	ctx := context.Background()
	if _, err := leader.store.createTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "g"}); err != nil {
		t.Fatal(err)
	}
	var wiped, stale *diskNode
	for _, d := range nodes {
		if d != leader {
			if wiped == nil {
				wiped = d
			} else {
				stale = d
			}
		}
	}
	wiped.stop()
	wiped.wipe()
	// No Raft traffic reaches the wiped member once it starts: the
	// leader's entries are held back.
	up := wiped.startAsync()
	leader.trans.Disconnect(wiped.addr)
	for _, d := range nodes {
		d.trans.Disconnect(wiped.addr)
	}
	if err := <-up; err != nil {
		t.Fatal(err)
	}
	// The leader may have reached it between the connect and the
	// disconnect: skip the check only if it caught up already.
	if wiped.store.voteGate.until.Load() == 0 {
		t.Skip("the member caught up before the leader was cut off")
	}
	candAddr, cand := raft.NewInmemTransportWithTimeout("", time.Second)
	cand.Connect(wiped.addr, wiped.trans)
	vote := func() (bool, error) {
		var resp raft.RequestVoteResponse
		err := cand.RequestVote(raft.ServerID(wiped.id), wiped.addr, &raft.RequestVoteRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(stale.id), Addr: []byte(candAddr)},
			Term:      stale.store.raft.CurrentTerm() + 10, LastLogIndex: 2, LastLogTerm: 1,
		}, &resp)
		return resp.Granted, err
	}
	if granted, err := vote(); granted {
		t.Fatalf("a member re-admitted without its state granted a stale candidate its vote before catching up (err %v)", err)
	}
	// Once caught up it votes as raft does: the stale log is refused on
	// its own terms.
	for _, d := range nodes {
		if d != wiped {
			d.trans.Connect(wiped.addr, wiped.trans)
		}
	}
	poll.Until(t, 15*time.Second, "the vote gate to open", func() bool { return wiped.store.voteGate.until.Load() == 0 })
	if granted, err := vote(); granted || err != nil && strings.Contains(err.Error(), "vote withheld") {
		t.Fatalf("after catching up: granted %v, err %v", granted, err)
	}
}

// TestAddMemberAddsNonVoter: AddMember (and so --join) adds a non-voter
// and answers before any promotion; a member that never catches up (here
// none runs) stays one, so it never counts toward a quorum.
func TestAddMemberAddsNonVoter(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	l := c.waitForLeader()
	res, err := l.client().AddMember(context.Background(), connect.NewRequest(&seqsvrv1.AddMemberRequest{Id: "n9", RaftAddr: "n9-raft", HttpAddr: "127.0.0.1:1"}))
	if err != nil {
		t.Fatal(err)
	}
	var got string
	for _, m := range res.Msg.GetMembers() {
		if m.GetId() == "n9" {
			got = m.GetSuffrage()
		}
	}
	if got != "nonvoter" {
		t.Fatalf("AddMember answered suffrage %q for the new member, want nonvoter", got)
	}
	time.Sleep(3 * promoteInterval)
	if s := suffrageOf(l.store, "n9"); s != "nonvoter" {
		t.Fatalf("a member that never answered became %s", s)
	}
}
