package fsm

import (
	"fmt"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// FormatVersion is the version of the persisted state (snapshots and the
// state inside a backup): SnapshotFormat, the one number (format.go).
// Restore refuses a newer one rather than misread it (guarantee 11).
const FormatVersion = SnapshotFormat

// applyNoop applies a new leader's Noop: it records the cluster's
// identity once (the first ID applied wins, so two leaders proposing
// different IDs still agree, and a leader repeating it reaches members that
// missed it, such as one upgraded from a snapshot of a binary that ignored
// it), and raises the cluster version it carries (applyClusterVersion).
func (st *fsmState) applyNoop(c *seqsvrv1.NoopCommand) Result {
	if st.clusterID == "" {
		st.clusterID = c.GetClusterId()
	}
	st.applyClusterVersion(c)
	return Result{}
}

// fenced refuses what must wait for the restore fence: after a restore or
// recovery no worker ID or section is granted until every lease of the
// old cluster has ended.
func (st *fsmState) fenced(now int64, what string) error {
	if now >= st.restoreFenceMs {
		return nil
	}
	return fmt.Errorf("%w: this cluster was restored; no %s is granted until every lease of the old cluster has ended, at %s (in %d ms)",
		ErrRestoreFence, what, time.UnixMilli(st.restoreFenceMs).UTC().Format(time.RFC3339Nano), st.restoreFenceMs-now)
}

// ClusterID is the cluster's identity, "" until the first leader recorded
// one.
func (f *Machine) ClusterID() (id string) {
	f.read(func(st *fsmState) { id = st.clusterID })
	return id
}

// HoldsData reports whether the state holds anything a cluster wrote: a
// cluster ID, a tag (or a deleted one), a request record, a worker, a
// member record, a space, a sequence member or a raised cluster version.
// A member whose only state is its bootstrap configuration holds none.
func (f *Machine) HoldsData() (held bool) {
	f.read(func(st *fsmState) {
		held = st.clusterID != "" || len(st.tags) > 0 || len(st.tombstones) > 0 ||
			len(st.requests) > 0 || len(st.workers) > 0 || len(st.members) > 0 ||
			len(st.spaces) > 0 || len(st.seqMembers) > 0 || st.clusterVersion > 0
	})
	return held
}
