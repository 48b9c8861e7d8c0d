package fsm

import (
	"log/slog"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// Level is the feature level this binary applies. The base release (the
// first one, jepsen/upgrade-base) is level 1 and knows no levels at all;
// level 2 is the first binary with a cluster version. A command or field
// that a lower-level binary would not apply the same way is proposed only
// once the cluster version reaches its level (registered with the command
// in commands.go, read by CommandLevel), so a member of the previous
// release never applies it differently.
const Level uint32 = 2

// BaseLevel is the level of a cluster (or a snapshot) that records none:
// one written by the base release.
const BaseLevel uint32 = 1

// applyClusterVersion raises the cluster version; it never lowers it, so
// a stale or repeated raise changes nothing and every member agrees
// whatever the order.
func (st *fsmState) applyClusterVersion(c *seqsvrv1.NoopCommand) {
	v := c.GetClusterVersion()
	if v <= st.clusterVersion {
		return
	}
	if v > Level {
		// Only a leader whose every member reported v raises to v, so this
		// member was rolled back below a level the cluster already uses:
		// it keeps applying, as the base release would, and says so.
		slog.Error("cluster version is above this binary's feature level: upgrade this member",
			"cluster_version", v, "binary_level", Level)
	}
	st.clusterVersion = v
}

// ClusterVersion is the cluster's feature level; BaseLevel until a leader
// raised it.
func (f *Machine) ClusterVersion() (v uint32) {
	f.read(func(st *fsmState) { v = max(st.clusterVersion, BaseLevel) })
	return v
}
