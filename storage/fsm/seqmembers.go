package fsm

import (
	"fmt"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// seqLive reports whether node holds a live per-key sequence lease at now:
// unexpired on the leader's clock and not leaving.
func (st *fsmState) seqLive(node string, now int64) bool {
	m, ok := st.seqMembers[node]
	return ok && m.GetLeaseExpiresMs() > now && !m.GetLeaving()
}

// liveMembers is the node_ids live at now, sorted.
func (st *fsmState) liveMembers(now int64) []string {
	var live []string
	for _, node := range sortedKeys(st.seqMembers) {
		if st.seqLive(node, now) {
			live = append(live, node)
		}
	}
	return live
}

// applySeqHeartbeat renews (or ends, when leaving) the caller's lease,
// takes back the sections it released, rebalances and answers every table.
// A node held by another live instance is refused and nothing changes. A
// new instance of a node whose lease expired takes the node over with the
// sections it still owns: the old instance fenced itself before its lease
// expired, and the new one loads each section (answering the committed
// max_seq) before serving it.
func (st *fsmState) applySeqHeartbeat(now int64, c *seqsvrv1.SeqHeartbeatCommand) Result {
	node := c.GetNodeId()
	if m, ok := st.seqMembers[node]; ok && m.GetInstanceId() != c.GetInstanceId() && st.seqLive(node, now) {
		return Result{Err: fmt.Errorf("%w: node %q is held by live instance %q for another %d ms",
			ErrSeqNodeHeld, node, m.GetInstanceId(), m.GetLeaseExpiresMs()-now)}
	}
	for _, span := range c.GetReleased() {
		if sp, ok := st.spaces[span.GetSpace()]; ok {
			sp.unown(node, span.GetFirstSection(), span.GetLastSection())
		}
	}
	ttl := orDefault(c.GetLeaseTtlMs(), spec.DefaultSeqLeaseTTL)
	m := &seqsvrv1.SeqMemberState{NodeId: node, InstanceId: c.GetInstanceId(), Url: c.GetUrl(), LeaseExpiresMs: now + ttl}
	if c.GetLeaving() {
		m.LeaseExpiresMs, m.Leaving = now, true
		for _, sp := range st.spaces {
			sp.unown(node, 0, sp.sections-1)
		}
	}
	// Replaced, never changed in place: snapshots share the entries.
	st.seqMembers[node] = m
	st.rebalance(now)
	return Result{Heartbeat: &seqsvrv1.SeqHeartbeatResponse{
		LeaseTtlMs: ttl, LeaseExpiresMs: m.GetLeaseExpiresMs(), LeaderNowMs: now, Tables: st.tables(),
	}}
}
