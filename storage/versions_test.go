package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

func TestRaiseTarget(t *testing.T) {
	servers := []raft.Server{
		{ID: "a", Suffrage: raft.Voter}, {ID: "b", Suffrage: raft.Voter}, {ID: "c", Suffrage: raft.Nonvoter},
	}
	levels := func(m map[string]uint32) func(string) (uint32, bool) {
		return func(id string) (uint32, bool) { l, ok := m[id]; return l, ok }
	}
	cases := []struct {
		name    string
		current uint32
		others  map[string]uint32
		want    uint32
	}{
		{"every member at 2", 1, map[string]uint32{"b": 2, "c": 2}, 2},
		{"a voter still at 1", 1, map[string]uint32{"b": 1, "c": 2}, 0},
		{"a non-voter still at 1 (it applies the log too)", 1, map[string]uint32{"b": 2, "c": 1}, 0},
		{"a member that did not answer", 1, map[string]uint32{"b": 2}, 0},
		{"already there", 2, map[string]uint32{"b": 2, "c": 2}, 0},
		{"a newer member does not lift the cluster past this one", 1, map[string]uint32{"b": 5, "c": 5}, 2},
	}
	for _, tc := range cases {
		if got := raiseTarget(tc.current, 2, servers, "a", levels(tc.others)); got != tc.want {
			t.Errorf("%s: raiseTarget = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestSelfReportedOldMember: a base-release member's ClusterStatus (no
// version, no level) counts as the base level, never as 0 or as current.
func TestSelfReportedOldMember(t *testing.T) {
	old := &seqsvrv1.ClusterStatusResponse{NodeId: "b", Members: []*seqsvrv1.Member{{Id: "a", State: "leader"}, {Id: "b", State: "follower"}}}
	if v := selfReported("b", old); v.level != fsm.BaseLevel || v.version != "" {
		t.Fatalf("base-release answer read as %+v", v)
	}
	cur := &seqsvrv1.ClusterStatusResponse{NodeId: "b", Members: []*seqsvrv1.Member{{Id: "a", Level: 1}, {Id: "b", Version: "0.2.0", Level: 2}}}
	if v := selfReported("b", cur); v.level != 2 || v.version != "0.2.0" {
		t.Fatalf("current answer read as %+v", v)
	}
}

// TestClusterVersionRaisedWhenEveryMemberReports: with one member
// reporting the base level the cluster stays at it and a level-2 command
// is refused; once that member reports level 2 the leader raises the
// cluster version, every member applies it and ClusterStatus shows it
// with each member's version.
func TestClusterVersionRaisedWhenEveryMemberReports(t *testing.T) {
	skipShort(t)
	c := newTestCluster(t, 3, nil)
	leader := c.waitForLeader()
	old := c.followers(leader)[0]
	old.store.levelOverride.Store(fsm.BaseLevel)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// Every member's level shows on the leader, the old one's at 1.
	poll.UntilOK(t, 20*time.Second, "the leader sees every member's level", func() error {
		st, err := leader.client().ClusterStatus(ctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
		if err != nil {
			return err
		}
		for _, m := range st.Msg.GetMembers() {
			want := fsm.Level
			if m.GetId() == old.id {
				want = fsm.BaseLevel
			}
			if m.GetLevel() != want || m.GetVersion() == "" {
				return errors.New("member " + m.GetId() + " not reported yet: " + m.String())
			}
		}
		return nil
	})
	// Two more poll rounds: still not raised.
	time.Sleep(2*versionPollInterval + 500*time.Millisecond)
	for _, n := range c.nodes {
		if v := n.store.fsm.ClusterVersion(); v != fsm.BaseLevel {
			t.Fatalf("%s: cluster version %d with a member at the base level", n.id, v)
		}
	}
	if err := leader.store.requireLevel(fsm.Level); !errors.Is(err, ErrClusterVersion) {
		t.Fatalf("requireLevel(%d) below it: %v, want ErrClusterVersion", fsm.Level, err)
	}

	old.store.levelOverride.Store(0) // the member is upgraded
	poll.UntilOK(t, 20*time.Second, "every member applies the raise", func() error {
		for _, n := range c.nodes {
			if v := n.store.fsm.ClusterVersion(); v != fsm.Level {
				return errors.New(n.id + " not raised yet")
			}
		}
		return nil
	})
	if err := leader.store.requireLevel(fsm.Level); err != nil {
		t.Fatalf("requireLevel(%d) at it: %v", fsm.Level, err)
	}
	st, err := old.client().ClusterStatus(ctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if st.Msg.GetClusterVersion() != fsm.Level {
		t.Fatalf("ClusterStatus cluster_version %d, want %d", st.Msg.GetClusterVersion(), fsm.Level)
	}
}
