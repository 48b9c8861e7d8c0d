package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// clusterVersionWait bounds the wait for the cluster version: the
// members poll each other every 2 s (docs/upgrading.md), so a few polls.
const clusterVersionWait = 30 * time.Second

// waitClusterVersion waits until the leader's ClusterStatus shows a
// cluster_version at the highest feature level any member reports, as
// docs/upgrading.md has the operator do before replacing the allocsvrs.
// It answers what it saw and whether the version failed to rise in time.
func (u *upgrader) waitClusterVersion(ctx context.Context) (string, bool) {
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, clusterVersionWait)
	defer cancel()
	last := "no answer"
	for {
		cv, top, err := u.clusterVersion(wctx)
		switch {
		case err != nil:
			last = err.Error()
		case top > 0 && cv >= top:
			return fmt.Sprintf("%d after %s", cv, time.Since(start).Round(100*time.Millisecond)), false
		default:
			last = fmt.Sprintf("%d while the members' highest level is %d", cv, top)
		}
		if launch.Sleep(wctx, 200*time.Millisecond) != nil {
			if ctx.Err() != nil {
				return "the run ended while waiting: " + last, false
			}
			return fmt.Sprintf("still %s after %s", last, clusterVersionWait), true
		}
	}
}

// clusterVersion is the leader's cluster_version and the highest level of
// its members.
func (u *upgrader) clusterVersion(ctx context.Context) (cv, top uint32, err error) {
	l, err := u.c.Leader(ctx)
	if err != nil {
		return 0, 0, err
	}
	st, err := u.c.Status(ctx, l)
	if err != nil {
		return 0, 0, err
	}
	for _, m := range st.GetMembers() {
		top = max(top, m.GetLevel())
	}
	return st.GetClusterVersion(), top, nil
}
