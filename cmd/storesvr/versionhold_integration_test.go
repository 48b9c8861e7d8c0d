package main

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// TestClusterVersionHoldFlag: members started with --cluster-version-hold
// at the base level report it in ClusterStatus and keep the cluster there
// although every one supports fsm.Level; a rolling restart without the
// flag lifts it, and the leader raises the cluster version.
func TestClusterVersionHoldFlag(t *testing.T) {
	hold := []string{"--cluster-version-hold", fmt.Sprint(fsm.BaseLevel)}
	c := launchtest.StartCluster(t, 3, 0, hold, nil)
	ctx := launchtest.Context(t, 2*time.Minute)
	status := func(p *launch.Proc) (version, held uint32, allAtLevel bool) {
		st, err := c.Status(ctx, p)
		if err != nil {
			return 0, 0, false
		}
		allAtLevel = len(st.GetMembers()) == 3
		for _, m := range st.GetMembers() {
			allAtLevel = allAtLevel && m.GetLevel() == fsm.Level
		}
		return st.GetClusterVersion(), st.GetClusterVersionHold(), allAtLevel
	}
	poll.UntilCtx(ctx, t, "every member reporting its level and its hold", func() bool {
		for _, p := range c.Stores {
			if _, held, all := status(p); held != fsm.BaseLevel || !all {
				return false
			}
		}
		return true
	})
	// Two more poll rounds of the leader (2 s each): a raise would be done.
	time.Sleep(5 * time.Second)
	for _, p := range c.Stores {
		if v, _, _ := status(p); v != fsm.BaseLevel {
			t.Fatalf("%s: cluster version %d under a hold at %d", p.Name, v, fsm.BaseLevel)
		}
	}

	for _, p := range c.Stores {
		p.ExtraArgs = slices.DeleteFunc(slices.Clone(p.ExtraArgs), func(a string) bool { return slices.Contains(hold, a) })
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitReady(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	poll.UntilCtx(ctx, t, "the cluster version raised once the hold is lifted", func() bool {
		for _, p := range c.Stores {
			if v, held, _ := status(p); v != fsm.Level || held != 0 {
				return false
			}
		}
		return true
	})
}
