package nemesis

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/cluster"
)

// The member-replace fault settles an ambiguous RemoveMember by retrying it
// and by asking the leader's configuration. Both rest on facts about the
// real storesvr checked here: removing an absent member succeeds, and the
// leader's ClusterStatus stops listing a removed member at once.
func TestRemoveMemberSettles(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real-process test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := cluster.Build(ctx, bin); err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Start(ctx, cluster.Options{BinDir: bin, Dir: dir, Stores: 3, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	e := &Env{C: c}

	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var f *cluster.Proc
	for _, p := range c.Stores {
		if p != leader {
			f = p
			break
		}
	}
	if member, known := e.isMember(ctx, f); !known || !member {
		t.Fatalf("before removal: member=%v known=%v, want a known member", member, known)
	}
	if err := e.removeMember(ctx, leader, f); err != nil {
		t.Fatal(err)
	}
	if member, known := e.isMember(ctx, f); !known || member {
		t.Fatalf("after removal: member=%v known=%v, want known and removed", member, known)
	}
	// A retry of a removal that already committed must not fail: that is
	// what lets an ambiguous answer be settled by trying again.
	if err := e.removeMember(ctx, leader, f); err != nil {
		t.Fatalf("removing an absent member: %v", err)
	}
}
