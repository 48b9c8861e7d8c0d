package nemesis

import (
	"context"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// The member-replace fault settles an ambiguous RemoveMember by retrying it
// and by asking the leader's configuration. Both rest on facts about the
// real storesvr checked here: removing an absent member succeeds, and the
// leader's ClusterStatus stops listing a removed member at once.
func TestRemoveMemberSettles(t *testing.T) {
	c := launchtest.Start(t, launch.Options{Stores: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := &Env{C: c}

	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var f *launch.Proc
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
