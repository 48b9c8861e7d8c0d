package storage

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// voteGateKey records, in the stable store, the commit index a member
// that started without Raft state must reach before it votes again (0 or
// absent: it votes). Kept on disk so that a member restarted before it
// caught up keeps withholding its vote.
var voteGateKey = []byte("seqsvr_vote_gate")

// errVoteWithheld is how a gated member answers RequestVote and pre-vote.
// Its text must not contain raft's "unexpected command", which a
// candidate takes as a granted pre-vote.
var errVoteWithheld = errors.New("vote withheld: this member lost its Raft state and has not caught up with the cluster that re-admitted it")

// gatedTransport is what raft needs of a transport to keep pre-vote and
// to close it on shutdown; both of the transports the store runs on
// (raftconf.Transport and raft's InmemTransport) are one.
type gatedTransport interface {
	raft.Transport
	raft.WithPreVote
	raft.WithClose
}

// voteGate is the transport of a member that lost its Raft state. Raft's
// safety assumes a voter never forgets what it acknowledged; such a member
// has, and raft v1.7.3 grants votes from an empty log and an empty
// configuration (its log passes the up-to-date check). A member that
// missed the entries the forgotten ones acknowledged, and still counts
// this member's old identity as a voter, could win with its vote and
// lead without them. So until this member's commit index has reached the
// index at which the leader re-admitted it (that entry and every earlier
// committed one are then in its log) it answers every RequestVote and
// pre-vote with errVoteWithheld. Other RPCs pass unchanged.
type voteGate struct {
	gatedTransport
	out      chan raft.RPC
	until    atomic.Uint64 // the commit index to reach; 0: open
	withheld atomic.Uint64 // votes refused, for the log and tests
	done     chan struct{}
	once     sync.Once
	log      *slog.Logger
}

func newVoteGate(t raft.Transport, until uint64, log *slog.Logger) (*voteGate, error) {
	gt, ok := t.(gatedTransport)
	if !ok {
		return nil, fmt.Errorf("storage: transport %T cannot be vote-gated", t)
	}
	g := &voteGate{gatedTransport: gt, out: make(chan raft.RPC), done: make(chan struct{}), log: log}
	g.until.Store(until)
	go g.run(gt.Consumer())
	return g, nil
}

// Consumer is what raft reads RPCs from: the transport's, less the votes
// withheld.
func (g *voteGate) Consumer() <-chan raft.RPC { return g.out }

func (g *voteGate) run(in <-chan raft.RPC) {
	var lastLog time.Time
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case <-g.done:
			return
		}
		if until := g.until.Load(); until != 0 {
			switch rpc.Command.(type) {
			case *raft.RequestVoteRequest, *raft.RequestPreVoteRequest:
				if n := g.withheld.Add(1); time.Since(lastLog) > 5*time.Second {
					lastLog = time.Now()
					g.log.Warn("vote withheld: this member lost its Raft state and has not caught up yet", "until_commit_index", until, "withheld", n)
				}
				rpc.Respond(nil, errVoteWithheld)
				continue
			}
		}
		select {
		case g.out <- rpc:
		case <-g.done:
			return
		}
	}
}

// open lets votes through from now on.
func (g *voteGate) open() { g.until.Store(0) }

// Close stops the gate and closes the transport under it.
func (g *voteGate) Close() error {
	g.once.Do(func() { close(g.done) })
	return g.gatedTransport.Close()
}

// watchVoteGate opens the gate, and clears the key on disk, once this
// member's commit index reached the gate's index and the configuration
// names this member again.
func (s *Store) watchVoteGate(g *voteGate, stable raft.StableStore) {
	defer s.wg.Done()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		until := g.until.Load()
		if until == 0 || s.raft.CommitIndex() < until || !s.inConfiguration() {
			continue
		}
		if err := stable.SetUint64(voteGateKey, 0); err != nil {
			s.log.Warn("could not clear the vote gate on disk; retrying", "err", err)
			continue
		}
		g.open()
		s.log.Info("caught up with the cluster that re-admitted this member: it votes again", "commit_index", s.raft.CommitIndex(), "gate_index", until, "votes_withheld", g.withheld.Load())
		return
	}
}

// storedVoteGate is the gate index recorded on disk, 0 if none.
func storedVoteGate(stable raft.StableStore) (uint64, error) {
	v, err := stable.GetUint64(voteGateKey)
	if err != nil && err.Error() != "not found" {
		return 0, fmt.Errorf("storage: read the vote gate: %w", err)
	}
	return v, nil
}
