package storage

import (
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// stopApplying is the state machine's OnFatal: this member met a
// committed entry it can neither apply nor skip, a command of a newer
// release (or one that does not decode). Skipping it would part this
// member's state from the others'; applying it as something else would
// too. So the process stops: it logs the entry (index and term, the
// command's case or field number, this binary's feature level and the
// cluster version) and exits non-zero at once, not through a graceful
// shutdown, during which it would still answer reads from a state that
// lags its log. Restarted on the same binary it meets the entry again;
// on a release that knows the command it applies it. The level gate
// keeps a cluster from committing such an entry while a member cannot
// apply it, so this is a member rolled back below the cluster version,
// or a bug.
func (s *Store) stopApplying(err error) {
	s.log.Error("stopping: this member cannot apply a committed raft entry; run a release that knows it (skipping it would fork the replicas)",
		"err", err, "binary_level", fsm.Level)
	s.exit(1)
}
