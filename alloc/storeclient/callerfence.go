package storeclient

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// The writes carry the followed cluster's ID (cluster_id), and a store
// member of another cluster refuses them before proposing anything. The
// survey finds an old member that took over a known address only every
// few seconds; this refusal finds it at the first write it is sent.

// callerClusterText begins a member's refusal of a write naming another
// cluster: storage.ErrCallerCluster's text (a test pins the two together).
const callerClusterText = "request for another store cluster"

// refusalHold is how long a member that refused a write as another
// cluster stays fenced whatever its ClusterStatus says. An answer to a
// survey sent before the old member took the address names the followed
// cluster, and must not bring it back; a member that answers both ways
// at once (a proxy over two clusters) is kept off for this long each time.
const refusalHold = 10 * time.Second

var refusalIdentity = regexp.MustCompile(`belongs to cluster (\S+) \(generation (-?\d+)\)`)

// stamp sets the cluster ID a write names ("" before any is known: the
// store then checks nothing, as for callers that never set it).
func stamp(req any, clusterID string) {
	switch r := req.(type) {
	case *seqsvrv1.ReserveSegmentRequest:
		r.ClusterId = clusterID
	case *seqsvrv1.RegisterWorkerRequest:
		r.ClusterId = clusterID
	case *seqsvrv1.RenewWorkerRequest:
		r.ClusterId = clusterID
	case *seqsvrv1.SeqHeartbeatRequest:
		r.ClusterId = clusterID
	case *seqsvrv1.RaiseSectionsRequest:
		r.ClusterId = clusterID
	}
}

// refusedAs reports whether err is a member's refusal of a write naming
// the followed cluster, and the identity the member named as its own.
func refusedAs(err error) (Identity, bool) {
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != connect.CodeFailedPrecondition || !strings.HasPrefix(ce.Message(), callerClusterText+":") {
		return Identity{}, false
	}
	m := refusalIdentity.FindStringSubmatch(ce.Message())
	if m == nil {
		return Identity{ClusterID: "unnamed"}, true
	}
	g, _ := strconv.ParseInt(m[2], 10, 64)
	return Identity{Generation: g, ClusterID: m[1]}, true
}

// refused fences the member at u, which refused a write as another
// cluster (id), as a ClusterStatus answer naming id would, and keeps it
// fenced for refusalHold.
func (c *Client) refused(u string, id Identity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fencedAnswers++
	if prev, had := c.fenced[u]; !had || prev != id {
		c.log.Warn("a store member refused a write as another cluster: not using it (keep old members down)",
			"url", u, "its_cluster_id", id.ClusterID, "its_generation", id.Generation, "cluster_id", c.followed.ClusterID, "generation", c.followed.Generation)
	}
	c.fenced[u] = id
	c.refusedAt[u] = time.Now()
	delete(c.live, u)
	if c.leader == u {
		c.leader = ""
	}
}

// heldRefusal reports whether u refused a write less than refusalHold
// ago; c.mu is held.
func (c *Client) heldRefusal(u string) bool {
	at, ok := c.refusedAt[u]
	if ok && time.Since(at) < refusalHold {
		return true
	}
	delete(c.refusedAt, u)
	return false
}
