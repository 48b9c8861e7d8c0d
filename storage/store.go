package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// Store is one member of the Raft-replicated tag store.
type Store struct {
	cfg     Config
	log     *slog.Logger
	raft    *raft.Raft
	fsm     *fsm
	closers []io.Closer

	clients sync.Map // http addr -> seqsvrv1connect.StoreServiceClient

	barrierMu   sync.Mutex
	barrierTerm atomic.Uint64 // the term whose leader has applied a barrier

	stop      chan struct{}
	stopCtx   context.Context // cancelled by Close, with stop
	stopAll   context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Open starts a member on real disk: raft-boltdb/v2 for the log and stable
// store (DataDir/raft.db), file snapshots in DataDir, and a TCP transport on
// RaftAddr. A member without state bootstraps from Peers (every initial
// member does the same, so start order does not matter) or joins through
// Join in the background, retrying until it is in.
func Open(cfg Config) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if cfg.DataDir == "" {
		return nil, errors.New("storage: DataDir is required")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return nil, fmt.Errorf("storage: create data dir: %w", err)
	}
	bolt, err := OpenBolt(filepath.Join(cfg.DataDir, "raft.db"))
	if err != nil {
		return nil, fmt.Errorf("storage: open raft.db: %w", err)
	}
	logs, err := raft.NewLogCache(1024, bolt)
	if err != nil {
		bolt.Close()
		return nil, err
	}
	hl := newHclog(cfg.Logger, "raft")
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 2, hl)
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("storage: snapshot store: %w", err)
	}
	adv, err := net.ResolveTCPAddr("tcp", cfg.RaftAddr)
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("storage: raft address %q: %w", cfg.RaftAddr, err)
	}
	trans, err := raft.NewTCPTransportWithLogger(cfg.RaftAddr, adv, RaftTransportPool, RaftTransportTimeout, hl)
	if err != nil {
		bolt.Close()
		return nil, fmt.Errorf("storage: raft transport on %s: %w", cfg.RaftAddr, err)
	}
	s, err := openWith(cfg, trans, logs, bolt, snaps, bolt)
	if err != nil {
		trans.Close()
		bolt.Close()
		return nil, err
	}
	return s, nil
}

// openWith starts a member on the given transport and stores (tests pass
// raft's in-memory ones). cfg must already have its defaults. closers are
// closed after raft shuts down.
func openWith(cfg Config, trans raft.Transport, logs raft.LogStore, stable raft.StableStore, snaps raft.SnapshotStore, closers ...io.Closer) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rc := raft.DefaultConfig()
	TuneRaftConfig(rc)
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.Logger = newHclog(cfg.Logger, "raft")
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.SnapshotInterval = cfg.SnapshotInterval
	if err := raft.ValidateConfig(rc); err != nil {
		return nil, fmt.Errorf("storage: raft config: %w", err)
	}
	existing, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return nil, fmt.Errorf("storage: inspect raft state: %w", err)
	}
	s := &Store{cfg: cfg, log: cfg.Logger, fsm: newFSM(cfg.layout), closers: closers, stop: make(chan struct{})}
	s.stopCtx, s.stopAll = context.WithCancel(context.Background())
	s.raft, err = raft.NewRaft(rc, s.fsm, logs, stable, snaps, trans)
	if err != nil {
		s.stopAll()
		return nil, fmt.Errorf("storage: start raft: %w", err)
	}
	switch {
	case existing:
		s.log.Info("restarting from existing raft state; peers/join ignored", "data_dir", cfg.DataDir)
	case cfg.Join != "":
		s.wg.Add(1)
		go s.joinLoop()
	default:
		if err := s.bootstrap(); err != nil {
			s.stopAll()
			s.raft.Shutdown()
			return nil, err
		}
	}
	s.wg.Add(1)
	go s.leaderLoop()
	return s, nil
}

// bootstrap writes the initial configuration. Every initial member writes
// the same one, so whichever wins the first election, they agree.
func (s *Store) bootstrap() error {
	peers := s.cfg.Peers
	if len(peers) == 0 {
		peers = []Peer{{ID: s.cfg.NodeID, RaftAddr: s.cfg.RaftAddr, HTTPAddr: s.cfg.HTTPAddr}}
	}
	var conf raft.Configuration
	for _, p := range peers {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
	}
	if err := s.raft.BootstrapCluster(conf).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("storage: bootstrap: %w", err)
	}
	s.log.Info("bootstrapped cluster", "members", len(peers))
	return nil
}

// Close shuts raft down cleanly and closes the stores. Safe to call twice.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.stopAll()
		s.closeErr = s.raft.Shutdown().Error()
		s.wg.Wait()
		for _, c := range s.closers {
			if err := c.Close(); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
		}
	})
	return s.closeErr
}

// Raft exposes the raft instance (metrics, tests, admin).
func (s *Store) Raft() *raft.Raft { return s.raft }

// Ready reports nil when this member is in a cluster with a known leader
// and has applied everything it has seen committed (for /readyz).
func (s *Store) Ready(ctx context.Context) error {
	state := s.raft.State()
	if state == raft.Shutdown {
		return fmt.Errorf("%w: raft is shut down", ErrUnavailable)
	}
	_, leader := s.raft.LeaderWithID()
	if leader == "" {
		return fmt.Errorf("%w: state %s", ErrNoLeader, state)
	}
	cf := s.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	member := false
	for _, srv := range cf.Configuration().Servers {
		member = member || srv.ID == raft.ServerID(s.cfg.NodeID)
	}
	if !member {
		return fmt.Errorf("%w: not a member of the cluster yet", ErrUnavailable)
	}
	if applied, commit := s.raft.AppliedIndex(), s.raft.CommitIndex(); applied < commit {
		return fmt.Errorf("%w: catching up: applied %d of %d committed", ErrUnavailable, applied, commit)
	}
	if state == raft.Leader && s.barrierTerm.Load() != s.raft.CurrentTerm() {
		return fmt.Errorf("%w: new leader still applying earlier entries", ErrUnavailable)
	}
	return ctx.Err()
}

// propose is the one write path: it stamps the command with the leader's
// clock, applies it through raft and waits until it is committed and
// applied here, then unwraps the FSM's answer.
func (s *Store) propose(ctx context.Context, cmd *seqsvrv1.Command) (applyResult, error) {
	if s.raft.State() != raft.Leader {
		return applyResult{}, ErrNotLeader
	}
	cmd.NowMs = s.cfg.Now().UnixMilli()
	b, err := proto.Marshal(cmd)
	if err != nil {
		return applyResult{}, fmt.Errorf("storage: marshal command: %w", err)
	}
	f := s.raft.Apply(b, timeoutFrom(ctx))
	if err := f.Error(); err != nil {
		return applyResult{}, mapRaftErr(err)
	}
	res, ok := f.Response().(applyResult)
	if !ok {
		return applyResult{}, fmt.Errorf("storage: unexpected apply response %T", f.Response())
	}
	return res, res.err
}

// mapRaftErr turns raft's errors into this package's sentinels. Only
// ErrNotLeader guarantees nothing was appended; the others may have
// committed, so clients retry with the same request_id.
func mapRaftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return ErrNotLeader
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("%w: leadership lost while committing; the write may have committed; retry with the same request_id", ErrUnavailable)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: raft is shutting down", ErrUnavailable)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: timed out waiting for raft; the write may have committed; retry with the same request_id", ErrUnavailable)
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: leadership transfer in progress", ErrUnavailable)
	}
	return fmt.Errorf("%w: raft: %v", ErrUnavailable, err)
}

func timeoutFrom(ctx context.Context) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		if d := time.Until(dl); d > 0 {
			return d
		}
		return time.Millisecond
	}
	return defaultApplyTimeout
}
