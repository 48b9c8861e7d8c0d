package seq

import (
	"context"
	"errors"
	"time"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// A space created a moment ago is in the store but not yet in this
// Node's tables, which change only when a heartbeat is answered.
// Answering not_found then would tell a client that created the space and
// called at once that it does not exist. So a space the tables lack is
// looked for again once a heartbeat sent after the call began has been
// answered: the loop's own, every HeartbeatInterval, so a miss adds no
// store write however many come. Only then, or after waiting two
// intervals for it (the store unreachable), is it not_found.

// tablesInstall is one installing of tables by an answered heartbeat.
type tablesInstall struct {
	sent time.Time     // when that heartbeat was sent
	done chan struct{} // closed when the next tables are installed
}

// installed notes that the tables of a heartbeat sent at sent are in
// place, and wakes the calls waiting for them. The heartbeats apply one
// at a time.
func (n *Node) installed(sent time.Time) {
	prev := n.install.Swap(&tablesInstall{sent: sent, done: make(chan struct{})})
	close(prev.done)
}

// tableFor is space's table; for a space the tables lack, it is looked
// for again after the first heartbeat sent since the call began (see
// above).
func (n *Node) tableFor(ctx context.Context, space string) (*table, error) {
	t, err := n.loadTables().get(space)
	if !errors.Is(err, errs.NotFound) {
		return t, err
	}
	start := n.clock.Now()
	limit := time.NewTimer(2 * n.cfg.HeartbeatInterval)
	defer limit.Stop()
	for {
		in := n.install.Load()
		if !in.sent.Before(start) {
			return n.loadTables().get(space)
		}
		select {
		case <-in.done:
		case <-limit.C:
			return nil, err
		case <-ctx.Done():
			return nil, err
		}
	}
}
