package storage

import (
	"fmt"
)

// checkCallerCluster refuses a write whose caller follows another cluster
// than this member's. The survey that keeps an allocsvr off an old cluster
// runs only every few seconds, so an old member brought back at the
// followed leader's address (a pod on its old volume keeps its DNS name)
// would otherwise answer writes in between from its own, stale state: IDs
// handed out twice. Checked before proposing, on every path a write takes
// (the connect handler, the HTTP/1.1 front, a follower before it forwards
// and the leader it forwards to), so neither the command nor the log
// changes. An empty want (seqctl, an older allocsvr) or a member that has
// no cluster ID yet is not checked.
func (s *Store) checkCallerCluster(want string) error {
	if want == "" {
		return nil
	}
	own := s.fsm.ClusterID()
	if own == "" || own == want {
		return nil
	}
	return fmt.Errorf("%w: this member belongs to cluster %s (generation %d), the caller follows cluster %s",
		ErrCallerCluster, own, s.fsm.Generation(), want)
}
