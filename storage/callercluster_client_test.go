package storage

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/alloc/storeclient"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// An old member that takes over the followed leader's address between two
// surveys answers the allocsvr's next write from nothing: the store
// client's write names the followed cluster, the old member refuses it,
// and the client fences the address. Real members of two clusters, the
// old one's Service served at the followed one's address.
func TestCallerClusterOldMemberAtLeaderAddress(t *testing.T) {
	oldLeader := newTestCluster(t, 1, nil).waitForLeader()
	followed := newTestCluster(t, 1, nil).waitForLeader()
	createTestTag(t, oldLeader)
	createTestTag(t, followed)
	url := "http://" + followed.httpAddr()
	c, err := storeclient.New([]string{url}, storeclient.Options{Logger: testLogger(), RequestTimeout: 5 * time.Second,
		BackoffInitial: time.Millisecond, BackoffMax: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := c.ReserveSegment(ctx, "t", 5, ""); err != nil {
		t.Fatal(err)
	}
	if got := c.ClusterID(); got == "" || got != followed.store.fsm.ClusterID() {
		t.Fatalf("the client follows %q, want %q", got, followed.store.fsm.ClusterID())
	}
	maxID := func() int64 { return oldLeader.store.fsm.Tag("t").GetMaxId() }
	before := maxID()

	followed.handler.Store(oldLeader.handler.Load())
	sctx, scancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer scancel()
	seg, err := c.ReserveSegment(sctx, "t", 5, "")
	if err == nil {
		t.Fatalf("the old member at the leader's address answered %v", seg)
	}
	// Fenced, the call waits for a member of the followed cluster until
	// its deadline; a refusal passed on would be failed_precondition.
	if !errors.Is(err, errs.Unavailable) {
		t.Fatalf("%v, want unavailable (no member of the followed cluster answers)", err)
	}
	if after := maxID(); after != before {
		t.Fatalf("the old cluster's max_id moved from %d to %d", before, after)
	}
	want := storeclient.FencedStore{URL: url, Identity: storeclient.Identity{Generation: oldLeader.store.fsm.Generation(), ClusterID: oldLeader.store.fsm.ClusterID()}}
	if f := c.FencedStores(); len(f) != 1 || f[0] != want {
		t.Fatalf("fenced %v, want %v", f, want)
	}
}
