package storage

import (
	"context"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// waitClusterID polls the member until its ClusterStatus carries an ID.
func waitClusterID(t *testing.T, n *testNode) string {
	t.Helper()
	var id string
	poll.Until(t, 10*time.Second, "a cluster ID", func() bool {
		st, err := n.client().ClusterStatus(context.Background(), connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
		id = st.Msg.GetClusterId()
		return err == nil && id != ""
	})
	return id
}

// Every member of a cluster reports the one ID its first leader recorded,
// a second cluster gets another, and each refuses a member of the other,
// naming both IDs: whether the joiner says so in the request or answers
// for itself.
func TestClusterIDAndJoinRefusal(t *testing.T) {
	a := newTestCluster(t, 3, nil)
	la := a.waitForLeader()
	idA := waitClusterID(t, la)
	for _, n := range a.nodes {
		poll.Until(t, 10*time.Second, "followers to report the cluster ID", func() bool { return n.store.fsm.ClusterID() == idA })
	}
	b := newTestCluster(t, 1, nil)
	lb := b.waitForLeader()
	idB := waitClusterID(t, lb)
	if idA == idB {
		t.Fatalf("two clusters share the ID %s", idA)
	}
	ctx := context.Background()
	// The joiner answers for itself: the leader asks its ClusterStatus.
	err := answered(t, func() error {
		_, err := a.waitForLeader().client().AddMember(ctx, connect.NewRequest(&seqsvrv1.AddMemberRequest{Id: lb.id, RaftAddr: string(lb.addr), HttpAddr: lb.httpAddr()}))
		return err
	})
	wantOtherCluster(t, err, idA, idB)
	// The joiner says so in the request (sent to a follower: forwarded).
	err = answered(t, func() error {
		_, err := a.followers(a.waitForLeader())[0].client().AddMember(ctx, connect.NewRequest(&seqsvrv1.AddMemberRequest{Id: "x", RaftAddr: "127.0.0.1:1", HttpAddr: "127.0.0.1:2", ClusterId: idB}))
		return err
	})
	wantOtherCluster(t, err, idA, idB)
	cf := a.waitForLeader().store.raft.GetConfiguration()
	if err := cf.Error(); err != nil || len(cf.Configuration().Servers) != 3 {
		t.Fatalf("configuration changed: %v %v", cf.Configuration(), err)
	}
}

// answered calls f until it is answered with anything but unavailable: a
// leader change on a loaded machine ("this member no longer leads") is
// not what the test checks.
func answered(t *testing.T, f func() error) error {
	t.Helper()
	var err error
	poll.Until(t, 30*time.Second, "an answer other than unavailable", func() bool {
		err = f()
		return connect.CodeOf(err) != connect.CodeUnavailable
	})
	return err
}

func wantOtherCluster(t *testing.T, err error, a, b string) {
	t.Helper()
	if connect.CodeOf(err) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) {
		t.Fatalf("err %v: want failed_precondition naming %s and %s", err, a, b)
	}
}
