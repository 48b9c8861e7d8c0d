package storeclient

import (
	"fmt"
	"strings"
)

// Identity names a store cluster: its generation (0 for a cluster
// bootstrapped fresh, raised by every restore or recovery) and its
// cluster ID. The zero Identity is "none known".
type Identity struct {
	Generation int64  `json:"generation"`
	ClusterID  string `json:"cluster_id"`
}

// Known reports whether the identity names a cluster: a store answers
// no cluster ID before its first leader recorded one, and a store of the
// base release never does.
func (id Identity) Known() bool { return id.ClusterID != "" }

func (id Identity) String() string {
	if !id.Known() {
		return "none"
	}
	return fmt.Sprintf("%s (generation %d)", id.ClusterID, id.Generation)
}

// above orders identities by (generation, cluster ID): the cluster ID
// only breaks a tie, so that every allocsvr shown the same members picks
// the same one.
func (id Identity) above(o Identity) bool {
	if id.Generation != o.Generation {
		return id.Generation > o.Generation
	}
	return strings.Compare(id.ClusterID, o.ClusterID) > 0
}

// verdict is what the client makes of a member's identity.
type verdict int

const (
	// usable: the followed cluster, or no identity known on either side.
	usable verdict = iota
	// newer: another cluster of a higher generation; the client takes it
	// over (a restore or recovery replaced the one it followed).
	newer
	// anonymous: the member names no cluster while the client follows
	// one. It is used only when no member of a known cluster answers
	// (a base-release store names none).
	anonymous
	// fenced: another cluster whose generation is not higher. Never used:
	// old members back after a restore, or a store rebuilt empty.
	fenced
)

// judge says what theirs is to a client that follows ours.
func judge(ours, theirs Identity) verdict {
	switch {
	case !theirs.Known() && ours.Known():
		return anonymous
	case !theirs.Known() || !ours.Known() || theirs.ClusterID == ours.ClusterID:
		// The same cluster may answer a lower generation: a member of the
		// base release drops the field from its snapshots.
		return usable
	case theirs.Generation > ours.Generation:
		return newer
	default:
		return fenced
	}
}

// FencedStore is a store URL whose last answer named another cluster of a
// generation not above the followed one.
type FencedStore struct {
	URL string
	Identity
}
