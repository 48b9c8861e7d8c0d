package raftconf

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/seqsvr/seqsvr/internal/poll"
)

// TestFollowerCatchesUpAfterRejectedAppends is the failure the disk
// scenario of make jepsen found (seed 35756): a follower whose log store
// refused appends for a moment (a full disk) answered the leader's
// pipelined AppendEntries with failure, and never received another entry,
// while heartbeats kept it a follower. hashicorp/raft's pipeline stops
// reading answers at the first failure, and the leader's next send can
// block for ever on the channel the answer reader no longer drains
// (hashicorp/raft#612). The transports built here do not pipeline, so
// every follower catches up once its appends succeed again.
//
// Real TCP transports between three raft members; the log stores are in
// memory, refusing appends on command.
func TestFollowerCatchesUpAfterRejectedAppends(t *testing.T) {
	nodes := startTCPCluster(t, 3)
	leader := waitLeader(t, nodes)

	stop := make(chan struct{})
	var load sync.WaitGroup
	for range 4 {
		load.Add(1)
		go func() {
			defer load.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Bounded: a wedged cluster must fail the test, not hang it.
				if !within(time.Second, func() { _ = leader.raft.Apply([]byte("x"), time.Second).Error() }) {
					return
				}
			}
		}()
	}
	// Each follower refuses its appends for a moment, many times, under
	// load: each refusal is a failed answer in the middle of replication.
	for round := range 40 {
		f := nodes[1+round%2]
		if f == leader {
			f = nodes[0]
		}
		f.logs.refuse.Store(true)
		time.Sleep(30 * time.Millisecond)
		f.logs.refuse.Store(false)
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	load.Wait()
	if leader.raft.State() != raft.Leader {
		t.Skip("leadership moved during the load; nothing to compare") // rare on a loaded machine
	}
	want := leader.raft.LastIndex()
	for _, n := range nodes {
		poll.Until(t, 15*time.Second, fmt.Sprintf("%s applies up to the leader's %d", n.id, want), func() bool {
			return n.raft.AppliedIndex() >= want
		})
	}
	if n := nodes[1].logs.refused.Load() + nodes[2].logs.refused.Load() + nodes[0].logs.refused.Load(); n == 0 {
		t.Fatal("no append was refused: the test did not exercise a failed answer")
	}
}

// refusingLogs is an in-memory log store that fails StoreLogs while
// refuse is set, as a full disk does.
type refusingLogs struct {
	*raft.InmemStore
	refuse  atomic.Bool
	refused atomic.Int64
}

var errRefused = errors.New("no space left on device (test)")

func (l *refusingLogs) StoreLog(e *raft.Log) error { return l.StoreLogs([]*raft.Log{e}) }

func (l *refusingLogs) StoreLogs(es []*raft.Log) error {
	if l.refuse.Load() {
		l.refused.Add(1)
		return errRefused
	}
	return l.InmemStore.StoreLogs(es)
}

type tcpNode struct {
	id   raft.ServerID
	raft *raft.Raft
	logs *refusingLogs
}

type countFSM struct{ n atomic.Uint64 }

func (f *countFSM) Apply(*raft.Log) any                 { f.n.Add(1); return nil }
func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) { return countSnap{}, nil }
func (f *countFSM) Restore(rc io.ReadCloser) error      { return rc.Close() }

type countSnap struct{}

func (countSnap) Persist(s raft.SnapshotSink) error { return s.Close() }
func (countSnap) Release()                          {}

// startTCPCluster starts n members with this package's config and TCP
// transport on loopback, bootstrapped together.
func startTCPCluster(t *testing.T, n int) []*tcpNode {
	t.Helper()
	var nodes []*tcpNode
	var servers []raft.Server
	var transports []*Transport
	for i := range n {
		tr, err := NewTransport("127.0.0.1:0", nil, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		transports = append(transports, tr)
		id := raft.ServerID(fmt.Sprintf("n%d", i))
		servers = append(servers, raft.Server{ID: id, Address: tr.LocalAddr()})
	}
	for i, tr := range transports {
		id := servers[i].ID
		rc, err := New(id, Timing{}, hclog.NewNullLogger())
		if err != nil {
			t.Fatal(err)
		}
		logs := &refusingLogs{InmemStore: raft.NewInmemStore()}
		stable := raft.NewInmemStore()
		snaps := raft.NewInmemSnapshotStore()
		if err := raft.BootstrapCluster(rc, logs, stable, snaps, tr, raft.Configuration{Servers: servers}); err != nil {
			t.Fatal(err)
		}
		r, err := raft.NewRaft(rc, &countFSM{}, logs, stable, snaps, tr)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, &tcpNode{id: id, raft: r, logs: logs})
		// A member whose replication is wedged never finishes its
		// shutdown: give up on it after a while (the test has failed).
		t.Cleanup(func() { within(5*time.Second, func() { _ = r.Shutdown().Error(); _ = tr.Close() }) })
	}
	return nodes
}

func waitLeader(t *testing.T, nodes []*tcpNode) *tcpNode {
	t.Helper()
	var leader *tcpNode
	poll.Until(t, 10*time.Second, "a leader", func() bool {
		for _, n := range nodes {
			if n.raft.State() == raft.Leader {
				leader = n
				return true
			}
		}
		return false
	})
	return leader
}

// within runs f and reports whether it returned within d (f goes on in
// the background otherwise).
func within(d time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// TestHeartbeatsGoThroughRaftsGoroutine: a heartbeat sent to a Transport
// reaches its consumer (raft's main goroutine) even with a heartbeat
// handler set, so a term change it carries is ordered with the member's
// appends (see Transport). With raft's own NetworkTransport the handler
// would take it.
func TestHeartbeatsGoThroughRaftsGoroutine(t *testing.T) {
	server, err := NewTransport("127.0.0.1:0", nil, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	client, err := NewTransport("127.0.0.1:0", nil, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	var handled atomic.Int64
	server.SetHeartbeatHandler(func(rpc raft.RPC) {
		handled.Add(1)
		rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
	})
	consumed := make(chan struct{}, 1)
	go func() {
		for rpc := range server.Consumer() {
			consumed <- struct{}{}
			rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
		}
	}()
	heartbeat := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ID: []byte("c"), Addr: []byte(client.LocalAddr())},
		Term:      9, Leader: []byte(client.LocalAddr()),
	}
	if err := client.AppendEntries("s", server.LocalAddr(), heartbeat, &raft.AppendEntriesResponse{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-consumed:
	case <-time.After(5 * time.Second):
		t.Fatal("the heartbeat did not reach the consumer")
	}
	if n := handled.Load(); n != 0 {
		t.Fatalf("the heartbeat handler took %d heartbeats", n)
	}
}
