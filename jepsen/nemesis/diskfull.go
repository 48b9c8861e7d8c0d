package nemesis

import (
	"context"
	"math/rand"
	"os"
	"path/filepath"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// diskFaults fill a process's data dir file system and free it again.
// They act only on a data dir on a tmpfs (launch.Options.DataDirTmpfs;
// the harness's Config.DataDirTmpfs), and skip otherwise: a fault must
// never fill the machine's disk.
//
// What they exercise: a storesvr whose raft.db cannot grow refuses writes
// (unavailable) and acknowledges nothing it did not write, the others
// carry on, and it serves again once space is back; an allocsvr that
// cannot write its snowflake high-water mark stops snowflake IDs and
// resumes. The checkers see only the safety side (no ID twice, no value
// backwards); the fault log shows when each data dir was full.
func diskFaults() []Fault {
	return []Fault{
		{"disk-full-store", "store", diskFullStore, 0},
		{"disk-full-alloc", "alloc", onRandomAlloc(diskFullAlloc), 0},
	}
}

// How long a data dir stays full: several election timeouts for a store
// (long enough for a leader to step down and the others to elect), a few
// high-water margins (1 s) for an allocsvr.
const (
	diskFullStoreLo, diskFullStoreHi = time.Second, 4 * time.Second
	diskFullAllocLo, diskFullAllocHi = 1500 * time.Millisecond, 4 * time.Second
)

// diskFullStore fills the leader's data dir half the time, a follower's
// otherwise.
func diskFullStore(ctx context.Context, e *Env, r *rand.Rand) error {
	target, leader, err := e.follower(ctx, r)
	if r.Intn(2) == 0 && leader != nil {
		target, err = leader, nil
	}
	if e.skipped("disk-full-store", err) {
		return nil
	}
	return fillHold(ctx, e, r, "disk-full-store", target, diskFullStoreLo, diskFullStoreHi)
}

func diskFullAlloc(ctx context.Context, e *Env, r *rand.Rand, a *launch.Proc) error {
	return fillHold(ctx, e, r, "disk-full-alloc", a, diskFullAllocLo, diskFullAllocHi)
}

// fillHold fills p's data dir file system, holds lo..hi and frees it.
func fillHold(ctx context.Context, e *Env, r *rand.Rand, name string, p *launch.Proc, lo, hi time.Duration) error {
	if !launch.OnTmpfs(p.DataDir) {
		e.Log.Skip(name, "%s's data dir %s is not on a tmpfs (set DataDirTmpfs); never filling a real disk", p.Name, p.DataDir)
		return nil
	}
	if _, err := os.Stat(filepath.Join(p.DataDir, launch.FillFile)); err == nil {
		e.Log.Skip(name, "%s's data dir is already full (another copy of the fault)", p.Name)
		return nil
	}
	_, n, err := launch.Fill(p.DataDir)
	if err != nil {
		_ = launch.Unfill(p.DataDir)
		return err
	}
	e.Log.Inject(name, p.Name, "data dir full (%d bytes written to fill it)", n)
	d := hold(ctx, r, lo, hi)
	if err := launch.Unfill(p.DataDir); err != nil {
		return err
	}
	e.Log.Heal(name, p.Name, "space freed after %v", d.Round(time.Millisecond))
	return nil
}
