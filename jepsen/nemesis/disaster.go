package nemesis

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/storage/backup"
)

// The disaster faults: backups taken every few seconds through
// StoreService.Backup (seqctl backup's call, with the admin token in the
// secure mode), and a disaster that destroys the whole store and restores
// it from the oldest backup, then loses a quorum and recovers the
// survivor. What they exercise: the jump on --restore and --recover must
// put every counter past anything the lost cluster handed out since, so
// the uniqueness checkers, which run over the history of every cluster,
// find no ID twice.
func disasterFaults() []Fault {
	return []Fault{
		{"backup", "backup", takeBackup, 0},
		{"disaster", "store", disaster, 0},
	}
}

// Names the disaster logs its two steps under (the fault counts and the
// checkers that split the history at a restore read them).
const (
	RestoreOldest = "restore-oldest"
	QuorumLoss    = "quorum-loss"
)

// shelf holds the backups of the current cluster, oldest first. A
// restore or a recovery empties it: a backup of an earlier cluster is
// older than the jump that started this one, and restoring it again would
// jump to about where this cluster started (docs/disaster-recovery.md).
type shelf struct {
	mu    sync.Mutex
	files []string
	taken int
}

func (s *shelf) add(f string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files = append(s.files, f)
	s.taken++
	return s.taken
}

func (s *shelf) oldest() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.files) == 0 {
		return ""
	}
	return s.files[0]
}

func (s *shelf) clear() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files = nil
}

// BackupsTaken is how many backups the backup fault wrote.
func (e *Env) BackupsTaken() int {
	e.backups.mu.Lock()
	defer e.backups.mu.Unlock()
	return e.backups.taken
}

// Between two backups, on top of the lane's gap.
const backupLo, backupHi = time.Second, 2 * time.Second

// takeBackup asks a running member for a backup (a follower relays the
// leader's), checks it as seqctl does and writes it to BackupDir. A
// member that cannot answer (an election, a disaster under way) is a
// skip, not an error.
func takeBackup(ctx context.Context, e *Env, r *rand.Rand) error {
	if e.BackupDir == "" {
		e.Log.Skip("backup", "no backup dir")
		return nil
	}
	if err := os.MkdirAll(e.BackupDir, 0o755); err != nil {
		return err
	}
	stores := slices.Clone(e.C.Stores)
	r.Shuffle(len(stores), func(i, j int) { stores[i], stores[j] = stores[j], stores[i] })
	var errs []error
	for _, p := range stores {
		if !p.Running() || p.Paused() {
			continue
		}
		file, err := fetchBackup(ctx, e, p)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.Name, err))
			continue
		}
		b, err := backup.Decode(file)
		if err != nil {
			return fmt.Errorf("%s sent a bad backup: %w", p.Name, err)
		}
		path := filepath.Join(e.BackupDir, fmt.Sprintf("backup-%d.bak", time.Now().UnixNano()))
		if err := os.WriteFile(path, file, 0o644); err != nil {
			return err
		}
		n := e.backups.add(path)
		e.Log.Heal("backup", p.Name, "backup #%d: cluster %s, raft index %d, %d bytes, %s", n, b.GetClusterId(), b.GetRaftIndex(), len(file), filepath.Base(path))
		hold(ctx, r, backupLo, backupHi)
		return nil
	}
	if ctx.Err() == nil {
		e.Log.Skip("backup", "no member answered: %v", errors.Join(errs...))
	}
	return nil
}

func fetchBackup(ctx context.Context, e *Env, p *launch.Proc) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	stream, err := e.C.StoreClient(p).Backup(ctx, connect.NewRequest(&seqsvrv1.BackupRequest{}))
	if err != nil {
		return nil, err
	}
	defer stream.Close()
	var buf bytes.Buffer
	for stream.Receive() {
		buf.Write(stream.Msg().GetData())
	}
	return buf.Bytes(), stream.Err()
}

// How long the load runs on the restored cluster before the quorum loss.
const disasterRestLo, disasterRestHi = 3 * time.Second, 6 * time.Second

// disaster destroys the whole store and restores it from the oldest
// backup of the current cluster, lets the load run on it, then kills and
// wipes two members and recovers the survivor. A step once begun runs to
// its end (its readiness waits bound it) even when the run ends: a store
// left half restored would leave nothing to check.
func disaster(ctx context.Context, e *Env, r *rand.Rand) error {
	e.memberMu.Lock()
	defer e.memberMu.Unlock()
	if e.backups.oldest() == "" {
		e.Log.Skip("disaster", "no backup of this cluster taken yet")
		return nil
	}
	if err := restoreOldest(context.WithoutCancel(ctx), e, r); err != nil {
		return err
	}
	hold(ctx, r, disasterRestLo, disasterRestHi)
	if ctx.Err() != nil {
		return nil // the run is over: no new disaster
	}
	return quorumLoss(context.WithoutCancel(ctx), e, r)
}

// restoreOldest SIGKILLs every member, deletes its data dir, starts the
// first one with --restore on the oldest backup (the default jump) and
// the others with --join, on the same addresses. It aims inside the
// restore fence (restorefence.go): an allocsvr cut off with a fresh
// lease, its worker ID asked for just before the wait ends.
func restoreOldest(ctx context.Context, e *Env, r *rand.Rand) error {
	file := e.backups.oldest()
	if file == "" {
		e.Log.Skip(RestoreOldest, "no backup taken yet")
		return nil
	}
	aim, err := aimFence(e, r, RestoreOldest, Inside)
	if err != nil {
		return err
	}
	defer aim.release()
	if err := killWipe(e.C.Stores, nil); err != nil {
		return err
	}
	e.backups.clear()
	start := time.Now()
	e.Log.Inject(RestoreOldest, "stores", "SIGKILL all %d members, data dirs deleted; restoring from %s%s", len(e.C.Stores), filepath.Base(file),
		aim.describe(e.restoreLeaseWait()))
	first := e.C.Stores[0]
	if err := startWith(ctx, e, first, "--restore", file); err != nil {
		return fmt.Errorf("%s: %w", RestoreOldest, err)
	}
	if err := joinOthers(ctx, e, first); err != nil {
		return fmt.Errorf("%s: %w", RestoreOldest, err)
	}
	struck := aim.strike(ctx, e, start)
	waitLeases(ctx, e, start)
	e.Log.Heal(RestoreOldest, "stores", "restored cluster ready after %s%s", time.Since(start).Round(time.Millisecond), struck)
	return nil
}

// quorumLoss SIGKILLs and wipes every member but the leader (the one with
// the most recent data), restarts the leader with --recover and joins the
// others afresh.
func quorumLoss(ctx context.Context, e *Env, r *rand.Rand) error {
	survivor, err := e.leader(ctx)
	if err != nil {
		survivor = e.C.Stores[r.Intn(len(e.C.Stores))]
	}
	aim, err := aimFence(e, r, QuorumLoss, Outside)
	if err != nil {
		return err
	}
	defer aim.release()
	if err := killWipe(e.C.Stores, survivor); err != nil {
		return err
	}
	if err := survivor.Kill(); err != nil {
		return err
	}
	e.backups.clear()
	start := time.Now()
	e.Log.Inject(QuorumLoss, survivor.Name, "SIGKILL all; the %d others wiped; recovering %s%s", len(e.C.Stores)-1, survivor.Name,
		aim.describe(e.restoreLeaseWait()))
	// The others are gone for good, and only the operator can say so: a
	// member that cannot be reached is not known to be gone.
	var lost []string
	for _, s := range e.C.Stores {
		if s != survivor {
			lost = append(lost, s.NodeID)
		}
	}
	if err := startWith(ctx, e, survivor, "--recover", "--recover-lost", strings.Join(lost, ",")); err != nil {
		return fmt.Errorf("%s: %w", QuorumLoss, err)
	}
	if err := joinOthers(ctx, e, survivor); err != nil {
		return fmt.Errorf("%s: %w", QuorumLoss, err)
	}
	struck := aim.strike(ctx, e, start)
	waitLeases(ctx, e, start)
	e.Log.Heal(QuorumLoss, survivor.Name, "recovered, %d fresh members joined, after %s%s", len(e.C.Stores)-1, time.Since(start).Round(time.Millisecond), struck)
	return nil
}

// killWipe SIGKILLs every store but keep and deletes its data dir.
func killWipe(stores []*launch.Proc, keep *launch.Proc) error {
	for _, s := range stores {
		if s == keep {
			continue
		}
		if err := s.Kill(); err != nil {
			return err
		}
		if err := s.Wipe(); err != nil {
			return err
		}
	}
	return nil
}

// startWith starts p alone (no --peers, no --join) with extra flags for
// this start only, and waits until it is ready. Later restarts of p start
// from its data dir.
func startWith(ctx context.Context, e *Env, p *launch.Proc, args ...string) error {
	orig := p.ExtraArgs
	p.Peers, p.Join = "", ""
	p.ExtraArgs = append(slices.Clone(orig), args...)
	err := p.Start(context.Background())
	p.ExtraArgs = orig
	if err != nil {
		return err
	}
	return e.waitReady(ctx, p, 60*time.Second)
}

// joinOthers starts every other member, wiped, with --join via first.
func joinOthers(ctx context.Context, e *Env, first *launch.Proc) error {
	for _, s := range e.C.Stores {
		if s == first {
			continue
		}
		s.Peers, s.Join = "", first.HTTPAddr
		if err := s.Start(context.Background()); err != nil {
			return err
		}
	}
	for _, s := range e.C.Stores {
		if err := e.waitReady(ctx, s, 60*time.Second); err != nil {
			return fmt.Errorf("%s not ready: %w", s.Name, err)
		}
	}
	return nil
}

// waitLeases waits until the restored cluster grants leases again (the
// lease wait after start, docs/disaster-recovery.md "Leases") and one per-key
// lease more, so the heal marks when the allocsvrs may serve again, not
// when the stores are up.
func waitLeases(ctx context.Context, e *Env, start time.Time) {
	sleep(ctx, time.Until(start.Add(e.restoreLeaseWait()+e.SeqLeaseTTL)))
}
