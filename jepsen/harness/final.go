package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
// one after them, and every member answers every tag with the same value.
// Only then do equal answers mean the replicas agree, rather than that one
// leader answered for all. The caller stops the writers (allocsvrs)
// first.
//
// Equal values are waited for, not only equal indexes: raft's applied
// index counts entries handed to the state machine's goroutine, which
// applies them a moment later, so one read can catch a member's state a
// batch behind the index it reports. Replicas that really differ never
// agree, and fail the checker once ctx ends. If no quiet point is reached
// before ctx ends, the last reads are returned with a note; disagreeing or
// missing values then fail the checker.
func finalState(ctx context.Context, c *launch.Cluster, tags []string) (map[string]map[string]int64, string) {
	var out map[string]map[string]int64
	last := "no read"
	var firstDiff string
	for ctx.Err() == nil {
		before, err := appliedIndexes(ctx, c)
		if err != nil || !allEqual(before) {
			last = fmt.Sprintf("applied indexes %v (%v)", before, err)
			sleep(ctx, 100*time.Millisecond)
			continue
		}
		out = readLocal(ctx, c, tags)
		after, err := appliedIndexes(ctx, c)
		if err != nil || !slices.Equal(before, after) {
			last = fmt.Sprintf("applied indexes moved during the reads: %v -> %v (%v)", before, after, err)
			continue
		}
		diff := disagreement(out, tags)
		if diff == "" {
			if firstDiff != "" {
				return out, "final state: the members' values agreed only after a re-read (" + firstDiff + ")"
			}
			return out, ""
		}
		if firstDiff == "" {
			firstDiff = fmt.Sprintf("at applied index %d, %s", before[0], diff)
		}
		last = fmt.Sprintf("values differ at applied index %d: %s (first seen %s)", before[0], diff, firstDiff)
		sleep(ctx, 200*time.Millisecond)
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

// disagreement names the first tag whose members answered different
// values (or not at all), or is empty when they all agree.
func disagreement(out map[string]map[string]int64, tags []string) string {
	var names []string
	for n := range out {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, t := range tags {
		var vals []string
		same := true
		ref, refOK := out[names[0]][t]
		for _, n := range names {
			v, ok := out[n][t]
			if ok != refOK || v != ref {
				same = false
			}
			if ok {
				vals = append(vals, fmt.Sprintf("%s=%d", n, v))
			} else {
				vals = append(vals, n+"=none")
			}
		}
		if !same {
			return fmt.Sprintf("tag %q: %v", t, vals)
		}
	}
	return ""
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

// raftKeptDir is the folder, in a scenario's results, of the members'
// raft.db copies (keepRaftData; a re-check compares them again).
const raftKeptDir = "raft-kept"

// keepRaftData copies each member's raft.db into out/raft-kept/NAME.db:
// the data dirs go when the cluster closes (tmpfs mounts with it), and the
// process logs alone cannot tell a replica that applied an entry the
// others do not hold from one that trails, or where an acknowledged entry
// went. The members are stopped first so the copies are whole.
// It returns the directory and a note saying what it kept.
func keepRaftData(out string, c *launch.Cluster) (dir, note string) {
	dir = filepath.Join(out, raftKeptDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return dir, err.Error()
	}
	var kept []string
	for _, s := range c.Stores {
		_ = s.Kill()
		b, err := os.ReadFile(filepath.Join(s.DataDir, "raft.db"))
		if err != nil {
			continue
		}
		if os.WriteFile(filepath.Join(dir, s.Name+".db"), b, 0o644) == nil {
			kept = append(kept, s.Name)
		}
	}
	return dir, fmt.Sprintf("raft logs of %v kept in %s", kept, dir)
}
