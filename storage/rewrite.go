package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/raftconf"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// Restore and recovery write a data dir before the member starts: a
// one-member Raft configuration of cfg.NodeID and a snapshot holding the
// new cluster's first state, so that state (jumped, leases void) is in
// force before raft runs, and no call is answered from anything older.

var (
	// ErrRewrite: a restore or recovery refused, with the reason.
	ErrRewrite = errs.New(errs.FailedPrecondition, "restore or recovery refused")
	// ErrDone: the data dir already holds the result of this restore (the
	// same backup) or of a recovery; the member just starts from it, so
	// a restart with the same command line is harmless.
	ErrDone = errors.New("already restored or recovered")
)

// Keys in the stable store: the backup a data dir was restored from, and
// the cluster ID a recovery made.
var (
	restoredFromKey = []byte("seqsvr_restored_from")
	recoveredToKey  = []byte("seqsvr_recovered_to")
)

// Seed makes cfg.DataDir, which must hold no Raft state, the data dir of
// a one-member cluster of cfg.NodeID whose first state is st. from names
// the backup (its checksum): a data dir already seeded from it is ErrDone.
func Seed(cfg Config, st *seqsvrv1.FSMSnapshot, from string) error {
	return rewrite(cfg, true, from, func(*seqsvrv1.FSMSnapshot) (*seqsvrv1.FSMSnapshot, error) { return st, nil })
}

// Recover turns this member's own data (its latest snapshot and every
// entry in its log, committed or not) into a one-member cluster of
// cfg.NodeID whose state is prepare(state). An error from prepare leaves
// the data dir as it was. A data dir whose state is still the cluster an
// earlier recovery made is ErrDone.
func Recover(cfg Config, prepare func(*seqsvrv1.FSMSnapshot) (*seqsvrv1.FSMSnapshot, error)) error {
	return rewrite(cfg, false, "", prepare)
}

func rewrite(cfg Config, seed bool, from string, prepare func(*seqsvrv1.FSMSnapshot) (*seqsvrv1.FSMSnapshot, error)) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	hl := newHclog(cfg.Logger, "raft")
	rc, err := raftconf.New(raft.ServerID(cfg.NodeID), cfg.raftTiming(), hl)
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("storage: create data dir: %w", err)
	}
	snaps, err := raftconf.NewSnapshots(cfg.DataDir, hl)
	if err != nil {
		return fmt.Errorf("storage: snapshot store: %w", err)
	}
	stores, err := raftconf.OpenStores(filepath.Join(cfg.DataDir, "raft.db"))
	if err != nil {
		return fmt.Errorf("storage: open raft.db: %w", err)
	}
	defer stores.Bolt.Close()
	// Only the snapshot's configuration encoding uses a transport: an
	// in-memory one leaves the Raft port free for the member's start.
	_, trans := raft.NewInmemTransport(raft.ServerAddress(cfg.RaftAddr))
	defer trans.Close()
	existing, err := raft.HasExistingState(stores.Logs, stores.Bolt, snaps)
	if err != nil {
		return fmt.Errorf("storage: inspect raft state: %w", err)
	}
	if _, err := dataDirOwner(stores.Bolt, cfg); err != nil {
		return err
	}
	conf := raftServers([]Peer{{ID: cfg.NodeID, RaftAddr: cfg.RaftAddr}})
	switch {
	case seed && existing && stableString(stores.Bolt, restoredFromKey) == from:
		return ErrDone
	case seed && existing:
		return fmt.Errorf("%w: --restore needs an empty data dir, and %s holds Raft state", ErrRewrite, cfg.DataDir)
	case !seed && !existing:
		return fmt.Errorf("%w: %s holds no Raft state to recover from", ErrRewrite, cfg.DataDir)
	case seed:
		if err := raft.BootstrapCluster(rc, stores.Logs, stores.Bolt, snaps, trans, conf); err != nil {
			return fmt.Errorf("storage: bootstrap the restored cluster: %w", err)
		}
	}
	recovered := stableString(stores.Bolt, recoveredToKey)
	var made string
	w := &rewriter{prepare: func(cur *seqsvrv1.FSMSnapshot) (*seqsvrv1.FSMSnapshot, error) {
		if !seed && recovered != "" && cur.GetClusterId() == recovered {
			return nil, ErrDone
		}
		st, err := prepare(cur)
		made = st.GetClusterId()
		return st, err
	}}
	// An entry the replay cannot apply (a newer release's command) ends
	// the rewrite with its error: a state without it is not the cluster's.
	w.Machine = fsm.New(nil, fsm.OnFatal(func(err error) { w.err = err }))
	if err := raft.RecoverCluster(rc, w, stores.Logs, stores.Bolt, snaps, trans, conf); err != nil {
		if w.err != nil {
			return w.err
		}
		return fmt.Errorf("storage: rewrite the raft state: %w", err)
	}
	key, val := recoveredToKey, made
	if seed {
		key, val = restoredFromKey, from
	}
	if err := stores.Bolt.Set(key, []byte(val)); err != nil {
		return fmt.Errorf("storage: record the restore: %w", err)
	}
	return claimDataDir(stores.Bolt, cfg)
}

// stableString is a key's value in the stable store, "" when absent.
func stableString(stable raft.StableStore, key []byte) string {
	v, err := stable.Get(key)
	if err != nil {
		return ""
	}
	return string(v)
}

// rewriter is the state machine raft.RecoverCluster replays the data dir
// into; its snapshot is prepare's answer.
type rewriter struct {
	*fsm.Machine
	prepare func(*seqsvrv1.FSMSnapshot) (*seqsvrv1.FSMSnapshot, error)
	err     error
}

func (w *rewriter) Snapshot() (raft.FSMSnapshot, error) {
	if w.err != nil {
		return nil, w.err
	}
	st, err := w.prepare(w.State())
	if err != nil {
		w.err = err
		return nil, err
	}
	if st == nil {
		w.err = errors.New("storage: no state to write")
		return nil, w.err
	}
	return fsm.SnapshotOf(st), nil
}
