package harness

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
)

// finalState reads every tag's max_id from every member's own applied
// state (GetTag with local=true, never forwarded) at a quiet point: all
// members report the same applied index before the reads and the same
// one after them. Only then do equal answers mean the replicas agree,
// rather than that one leader answered for all. The caller stops the
// writers (allocsvrs) first. If no quiet point is reached before ctx
// ends, the last reads are returned with a note; disagreeing or missing
// values then fail the checker.
func finalState(ctx context.Context, c *launch.Cluster, tags []string) (map[string]map[string]int64, string) {
	var out map[string]map[string]int64
	last := "no read"
	for ctx.Err() == nil {
		before, err := appliedIndexes(ctx, c)
		if err != nil || !allEqual(before) {
			last = fmt.Sprintf("applied indexes %v (%v)", before, err)
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		out = readLocal(ctx, c, tags)
		after, err := appliedIndexes(ctx, c)
		if err == nil && slices.Equal(before, after) {
			return out, ""
		}
		last = fmt.Sprintf("applied indexes moved during the reads: %v -> %v (%v)", before, after, err)
	}
	if out == nil {
		out = readLocal(context.Background(), c, tags)
	}
	return out, "final state read without a quiet point: " + last + dumpLagging(c)
}

// dumpLagging sends SIGQUIT to every member whose applied index is below
// the highest, so that the Go runtime writes all its goroutines to the
// member's log before it exits: a member that stopped catching up says
// where it waits. The run is over; the cluster is closed next.
func dumpLagging(c *launch.Cluster) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	idx, err := appliedIndexes(ctx, c)
	if err != nil || len(idx) != len(c.Stores) {
		return ""
	}
	top := slices.Max(idx)
	var dumped []string
	for i, s := range c.Stores {
		if idx[i] < top && s.Signal(syscall.SIGQUIT) == nil {
			dumped = append(dumped, s.Name)
		}
	}
	if len(dumped) == 0 {
		return ""
	}
	return fmt.Sprintf("; goroutines of %v (behind) dumped to their logs", dumped)
}

func appliedIndexes(ctx context.Context, c *launch.Cluster) ([]uint64, error) {
	idx := make([]uint64, 0, len(c.Stores))
	for _, s := range c.Stores {
		st, err := c.Status(ctx, s)
		if err != nil {
			return idx, fmt.Errorf("%s: %w", s.Name, err)
		}
		idx = append(idx, st.GetAppliedIndex())
	}
	return idx, nil
}

func allEqual(v []uint64) bool {
	for _, x := range v {
		if x != v[0] {
			return false
		}
	}
	return len(v) > 0
}

// readLocal maps member -> tag -> max_id; a member that does not answer
// for a tag leaves it absent.
func readLocal(ctx context.Context, c *launch.Cluster, tags []string) map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, s := range c.Stores {
		m := map[string]int64{}
		for _, t := range tags {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			resp, err := c.StoreClient(s).GetTag(cctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: t, Local: true}))
			cancel()
			if err == nil {
				m[t] = resp.Msg.GetMaxId()
			}
		}
		out[s.Name] = m
	}
	return out
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) { _ = launch.Sleep(ctx, d) }
