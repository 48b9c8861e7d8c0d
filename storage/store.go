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
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/raftconf"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// Store is one member of the Raft-replicated tag store.
type Store struct {
	cfg     Config
	log     *slog.Logger
	raft    *raft.Raft
	fsm     *fsm.Machine
	disk    *diskGuard // nil for in-memory stores (tests)
	closers []io.Closer

	clients sync.Map // http addr -> seqsvrv1connect.StoreServiceClient

	versions      versionBook   // the other members' release and feature level
	levelOverride atomic.Uint32 // tests: the level this member reports, if not 0

	barrierMu   sync.Mutex
	barrierTerm atomic.Uint64 // the term whose leader has applied a barrier

	handingOff atomic.Bool // a leadership transfer for a bad disk is running

	voteGate *voteGate  // nil unless this member started without its Raft state
	memberMu sync.Mutex // this leader's membership changes take turns (promote.go)

	peerAuth // who may speak Raft beyond the configuration (peerauth.go)

	// exit ends the process when the state machine stops (applystop.go):
	// os.Exit; tests record the code instead.
	exit func(code int)

	stop      chan struct{}
	stopCtx   context.Context // cancelled by Close, with stop
	stopAll   context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
}

// Open starts a member on real disk: raft-boltdb/v2 for the log and stable
// store (DataDir/raft.db), file snapshots in DataDir, and a TCP transport on
// RaftAddr, all as package raftconf builds them. A member without state
// bootstraps from Peers (every initial member does the same, so start order
// does not matter), bootstraps alone when Bootstrap says so, or joins
// through Join in the background, retrying until it is in.
func Open(cfg Config) (*Store, error) {
	return OpenContext(context.Background(), cfg)
}

// OpenContext is Open whose wait, where a member without Raft state waits
// to learn whether to bootstrap or rejoin (discover), ends with ctx.
func OpenContext(ctx context.Context, cfg Config) (*Store, error) {
	return openContext(ctx, cfg, diskRaft)
}

// raftParts are the transport and stores a member runs raft on; closers
// are closed after raft shuts down (raft closes a transport itself on
// shutdown; closing it again is a no-op).
type raftParts struct {
	trans   raft.Transport
	logs    raft.LogStore
	stable  raft.StableStore
	snaps   raft.SnapshotStore
	disk    *diskGuard // between raft and the bolt file; nil in memory
	closers []io.Closer
}

// diskRaft opens Open's transport and stores for cfg (already defaulted).
func diskRaft(cfg Config) (raftParts, error) {
	if cfg.DataDir == "" {
		return raftParts{}, errors.New("storage: DataDir is required")
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return raftParts{}, fmt.Errorf("storage: create data dir: %w", err)
	}
	hl := newHclog(cfg.Logger, "raft")
	fileSnaps, err := raftconf.NewSnapshots(cfg.DataDir, hl)
	if err != nil {
		return raftParts{}, fmt.Errorf("storage: snapshot store: %w", err)
	}
	snaps := cleanSnapshots{SnapshotStore: fileSnaps, dir: filepath.Join(cfg.DataDir, "snapshots"), log: cfg.Logger}
	snaps.reapSnapshotTmp()
	if err := checkNewestSnapshot(fileSnaps, snaps.dir); err != nil {
		return raftParts{}, err
	}
	adv, err := net.ResolveTCPAddr("tcp", cfg.RaftAddr)
	if err != nil {
		return raftParts{}, fmt.Errorf("storage: raft address %q: %w", cfg.RaftAddr, err)
	}
	dbPath := filepath.Join(cfg.DataDir, "raft.db")
	stores, err := raftconf.OpenStores(dbPath)
	if err != nil {
		return raftParts{}, fmt.Errorf("storage: open raft.db: %w", err)
	}
	// The guard goes below raft's log cache, which formats the store's
	// error into a string; its stop channel is the Store's (start).
	disk := newDiskGuard(stores.Bolt, dbPath, cfg.Logger, nil)
	logs, err := raft.NewLogCache(raftconf.LogCacheSize, disk)
	if err != nil {
		stores.Bolt.Close()
		return raftParts{}, fmt.Errorf("storage: log cache: %w", err)
	}
	var trans *raftconf.Transport
	if cfg.RaftTLS != nil {
		trans, err = raftconf.NewTLSTransport(cfg.RaftAddr, adv, cfg.RaftTLS, hl)
	} else {
		trans, err = raftconf.NewTransport(cfg.RaftAddr, adv, hl)
	}
	if err != nil {
		stores.Bolt.Close()
		return raftParts{}, fmt.Errorf("storage: raft transport on %s: %w", cfg.RaftAddr, err)
	}
	return raftParts{trans: trans, logs: logs, stable: disk, snaps: snaps, disk: disk, closers: []io.Closer{trans, stores.Bolt}}, nil
}

// open applies cfg's defaults (the only place they are applied), gets the
// transport and stores from parts (tests pass raft's in-memory ones) and
// starts the member. On failure it closes what parts opened.
func open(cfg Config, parts func(Config) (raftParts, error)) (*Store, error) {
	return openContext(context.Background(), cfg, parts)
}

func openContext(ctx context.Context, cfg Config, parts func(Config) (raftParts, error)) (*Store, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rc, err := raftconf.New(raft.ServerID(cfg.NodeID), cfg.raftTiming(), newHclog(cfg.Logger, "raft"))
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	p, err := parts(cfg)
	if err != nil {
		return nil, err
	}
	s, err := start(ctx, cfg, rc, p)
	if err != nil {
		for _, c := range p.closers {
			c.Close()
		}
		return nil, err
	}
	return s, nil
}

// start runs raft on p. A member whose data dir holds its Raft log checks
// it against its flags first. A member without one (forgotten: new, or
// its disk was lost) never votes on what it forgot: with Peers or Join it
// first learns from the listed members whether to bootstrap or to be
// taken back by a running cluster (discover), and runs raft with its vote
// withheld until it has caught up (voteGate); with Bootstrap it
// bootstraps alone; with none of them it refuses (ErrNoCluster). Then the
// per-term leader chores start.
func start(ctx context.Context, cfg Config, rc *raft.Config, p raftParts) (*Store, error) {
	existing, err := raft.HasExistingState(p.logs, p.stable, p.snaps)
	if err != nil {
		return nil, fmt.Errorf("storage: inspect raft state: %w", err)
	}
	lost, err := forgotten(p.stable)
	if err != nil {
		return nil, err
	}
	if lost {
		switch {
		case cfg.Join != "":
		case len(cfg.Peers) > 0:
			if err := checkBootstrapPeers(cfg); err != nil {
				return nil, err
			}
		case !cfg.Bootstrap:
			return nil, fmt.Errorf("%w: %s holds no Raft state and neither Peers, Join nor Bootstrap is set", ErrNoCluster, cfg.DataDir)
		}
	}
	owner, err := dataDirOwner(p.stable, cfg)
	if err != nil {
		return nil, err
	}
	gate, err := storedVoteGate(p.stable)
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, log: cfg.Logger, disk: p.disk, closers: p.closers, stop: make(chan struct{}), exit: os.Exit}
	s.fsm = fsm.New(nil, fsm.OnFatal(s.stopApplying))
	s.stopCtx, s.stopAll = context.WithCancel(context.Background())
	if s.disk != nil {
		s.disk.stop = s.stop
	}
	var plan startPlan
	if lost {
		if existing {
			s.log.Warn("the data dir holds snapshots but no raft term: whatever this member acknowledged is gone; it starts as a member without state", "data_dir", cfg.DataDir)
		}
		if cfg.Join != "" || len(cfg.Peers) > 0 {
			if plan, err = s.discover(ctx); err != nil {
				s.stopAll()
				return nil, err
			}
		} else {
			plan.bootstrap = true // Bootstrap: a one-member cluster has no one to ask
		}
		if plan.gate != 0 {
			gate = plan.gate
			if err := p.stable.SetUint64(voteGateKey, gate); err != nil {
				s.stopAll()
				return nil, fmt.Errorf("storage: record the vote gate: %w", err)
			}
		}
	}
	// A directory with state but no owner is claimed once its stored
	// configuration let this start through (checkStoredConfiguration).
	if owner == "" && lost {
		if err := claimDataDir(p.stable, cfg); err != nil {
			s.stopAll()
			return nil, err
		}
	}
	trans := p.trans
	var vg *voteGate
	if gate != 0 {
		if vg, err = newVoteGate(p.trans, gate, s.log); err != nil {
			s.stopAll()
			return nil, err
		}
		trans = vg
		s.voteGate = vg
	}
	s.raft, err = raft.NewRaft(rc, s.fsm, p.logs, p.stable, p.snaps, trans)
	if err != nil {
		s.stopAll()
		if vg != nil {
			vg.Close()
		}
		return nil, fmt.Errorf("storage: start raft: %w", err)
	}
	switch {
	case !lost:
		if err = s.checkStoredConfiguration(owner == ""); err == nil && owner == "" {
			err = claimDataDir(p.stable, cfg)
		}
	case plan.bootstrap:
		err = s.bootstrap()
	}
	if err != nil {
		s.stopAll()
		s.raft.Shutdown()
		return nil, err
	}
	if vg != nil {
		s.wg.Add(1)
		go s.watchVoteGate(vg, p.stable)
	}
	s.wg.Add(1)
	go s.leaderLoop()
	s.wg.Add(1)
	go s.promoteLoop()
	s.wg.Add(1)
	go s.versionLoop()
	if s.disk != nil {
		s.disk.follower = func() bool { return s.raft.State() == raft.Follower }
		s.disk.retry.Store(true)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.disk.probeLoop()
		}()
	}
	return s, nil
}

// bootstrap writes the initial configuration: Peers, or this member alone
// when Bootstrap asked for that. Every initial member writes the same one,
// so whichever wins the first election, they agree.
func (s *Store) bootstrap() error {
	peers := s.cfg.Peers
	if len(peers) == 0 {
		peers = []Peer{{ID: s.cfg.NodeID, RaftAddr: s.cfg.RaftAddr, HTTPAddr: s.cfg.HTTPAddr}}
	}
	if err := s.raft.BootstrapCluster(raftServers(peers)).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
		return fmt.Errorf("storage: bootstrap: %w", err)
	}
	s.log.Info("bootstrapped cluster", "members", len(peers))
	return nil
}

// Close shuts raft down cleanly and closes the stores. Safe to call twice.
// A raft held by a stable-store write that cannot succeed (diskGuard) is
// not waited for, and the stores are left open under it: the process is
// exiting.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.stopAll()
		if err, stopped := s.shutdownRaft(); !stopped {
			s.closeErr = err
			s.log.Warn("raft is waiting for the data dir to take a write; closing without it", "path", s.disk.path)
			return
		} else {
			s.closeErr = err
		}
		s.wg.Wait()
		for _, c := range s.closers {
			if err := c.Close(); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
		}
	})
	return s.closeErr
}

// shutdownRaft shuts raft down and waits for it, unless raft is stuck
// retrying a write to a data dir that refuses it (stopped false).
func (s *Store) shutdownRaft() (err error, stopped bool) {
	f := s.raft.Shutdown()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return err, true
		case <-tick.C:
			if s.disk != nil && s.disk.stuck.Load() {
				return fmt.Errorf("%w: raft did not stop: %v", errs.Unavailable, s.disk.check()), false
			}
		}
	}
}

// Raft exposes the raft instance (metrics, tests, admin).
func (s *Store) Raft() *raft.Raft { return s.raft }

// Ready reports nil when this member is in a cluster with a known leader
// and has applied everything it has seen committed (for /readyz).
func (s *Store) Ready(ctx context.Context) error {
	state := s.raft.State()
	if state == raft.Shutdown {
		return fmt.Errorf("%w: raft is shut down", errs.Unavailable)
	}
	if err := s.disk.check(); err != nil {
		return err
	}
	_, leader := s.raft.LeaderWithID()
	if leader == "" {
		return fmt.Errorf("%w: state %s", ErrNoLeader, state)
	}
	cf := s.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return fmt.Errorf("%w: %v", errs.Unavailable, err)
	}
	member := false
	for _, srv := range cf.Configuration().Servers {
		member = member || srv.ID == raft.ServerID(s.cfg.NodeID)
	}
	if !member {
		return fmt.Errorf("%w: not a member of the cluster yet", errs.Unavailable)
	}
	if applied, commit := s.raft.AppliedIndex(), s.raft.CommitIndex(); applied < commit {
		return fmt.Errorf("%w: catching up: applied %d of %d committed", errs.Unavailable, applied, commit)
	}
	if state == raft.Leader && s.barrierTerm.Load() != s.raft.CurrentTerm() {
		return fmt.Errorf("%w: new leader still applying earlier entries", errs.Unavailable)
	}
	return ctx.Err()
}

// propose is the one write path: it runs the command's registered check
// (invalid_argument before anything else, on any member), stamps the
// command with the leader's clock, applies it through raft and waits
// until it is committed and applied here, then unwraps the FSM's answer.
// A member whose data dir refuses writes answers ErrDiskFull or ErrDiskIO
// and neither proposes nor forwards. A command the cluster version does
// not allow yet, or one this binary does not know, is never proposed.
func (s *Store) propose(ctx context.Context, cmd *seqsvrv1.Command) (fsm.Result, error) {
	if err := s.checkCommand(cmd); err != nil {
		return fsm.Result{}, err
	}
	if err := s.disk.check(); err != nil {
		if s.raft.State() == raft.Leader {
			s.handOffLeadership(err)
		}
		return fsm.Result{}, err
	}
	if s.raft.State() != raft.Leader {
		return fsm.Result{}, ErrNotLeader
	}
	level, err := fsm.CommandLevel(cmd)
	if err != nil {
		return fsm.Result{}, err
	}
	if err := s.requireLevel(level); err != nil {
		return fsm.Result{}, err
	}
	cmd.NowMs = s.cfg.Clock.Now().UnixMilli()
	b, err := proto.Marshal(cmd)
	if err != nil {
		return fsm.Result{}, fmt.Errorf("storage: marshal command: %w", err)
	}
	f := s.raft.Apply(b, timeoutFrom(ctx))
	if err := s.await(f); err != nil {
		if derr := s.disk.check(); derr != nil {
			// Raft refused the entry because the local append failed
			// (and stepped down): nothing was acknowledged; say why.
			return fsm.Result{}, derr
		}
		return fsm.Result{}, mapRaftErr(err)
	}
	res, ok := f.Response().(fsm.Result)
	if !ok {
		return fsm.Result{}, fmt.Errorf("storage: unexpected apply response %T", f.Response())
	}
	return res, res.Err
}

// checkCommand runs cmd's check, registered with it in package fsm, with
// this member's limits.
func (s *Store) checkCommand(cmd *seqsvrv1.Command) error {
	return fsm.CheckCommand(cmd, fsm.Limits{MaxSegmentSize: s.cfg.MaxSegmentSize})
}

// awaitGrace is how long a future may still be answered once Close has
// begun: raft answers its in-flight entries as it shuts down.
const awaitGrace = time.Second

// await waits for f. hashicorp/raft v1.7.3 never answers an Apply or
// Barrier future still queued in its batched apply channel, or a committed
// one in its FSM queue, when it shuts down (those futures carry no
// shutdown channel), so a leader loop or handler waiting on one held Close
// for ever. After Close has begun, await gives raft awaitGrace, then
// answers ErrRaftShutdown: the write may have committed, and the caller's
// retry with the same request_id settles it.
func (s *Store) await(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-s.stop:
	}
	select {
	case err := <-done:
		return err
	case <-time.After(awaitGrace):
		return raft.ErrRaftShutdown
	}
}

// mapRaftErr turns raft's errors into this package's sentinels. Only
// ErrNotLeader guarantees nothing was appended; the others may have
// committed, so clients retry with the same request_id.
func mapRaftErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader):
		return ErrNotLeader
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("%w: leadership lost while committing; the write may have committed; retry with the same request_id", errs.Unavailable)
	case errors.Is(err, raft.ErrRaftShutdown):
		return fmt.Errorf("%w: raft is shutting down; a write may have committed; retry with the same request_id", errs.Unavailable)
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return fmt.Errorf("%w: timed out waiting for raft; the write may have committed; retry with the same request_id", errs.Unavailable)
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: leadership transfer in progress", errs.Unavailable)
	}
	return fmt.Errorf("%w: raft: %v", errs.Unavailable, err)
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
