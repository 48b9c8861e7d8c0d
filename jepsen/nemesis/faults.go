package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// Catalogue lists every fault by name.
func Catalogue() map[string]Fault {
	m := map[string]Fault{}
	for _, f := range []Fault{
		{"kill-leader", "store", killLeader, 0},
		{"kill-follower", "store", killFollower, 0},
		{"kill-all-stores", "store", killAllStores, 0},
		{"pause-leader", "store", pauseLeader, 0},
		{"pause-follower", "store", pauseFollower, 0},
		{"member-replace", "store", memberReplace, 0},
		{LoseDisk, "store", loseDisk, 0},
		{"partition-leader", "store", partitionLeader, 0},
		{"partition-halves", "store", partitionHalves, 0},
		{"partition-ring", "store", partitionRing, 0},
		{"partition-bridge", "store", partitionBridge, 0},
		{"partition-oneway", "store", partitionOneWay, 0},
		{"leader-change-resend", "store", leaderChangeResend, 0},
		{"snapshot-resend", "store", snapshotResend, 0},
		{"kill-alloc", "alloc", onRandomAlloc(killAlloc), 0},
		// An allocsvr killed only after it lived 4-8 s: long enough to
		// drain and switch segments many times.
		{"kill-alloc-slow", "alloc", onRandomAlloc(killAllocSlow), 4 * time.Second},
		{"isolate-alloc-long", "alloc", isolateAllocLong, 0},
		{"pause-alloc", "alloc", onRandomAlloc(pauseAlloc), 0},
		{"clock-jump-alloc", "alloc", onRandomAlloc(clockJump), 0},
		{"clock-back-restart", "alloc", onRandomAlloc(clockBackRestart), 0},
		{"isolate-alloc", "alloc", isolateAlloc, 0},
		{"twin-takeover", "alloc", twinTakeover, 0},
		{"skewed-takeover", "alloc", skewedTakeover, 0},
		{"pause-takeover", "alloc", pauseTakeover, 0},
		// In the store lane: its fault is the stores' clocks, and beside
		// skewed-takeover (alloc lane) each gets its turn at the twin.
		{"fence-skew-takeover", "store", fenceSkewTakeover, 0},
		{"restart-below-issued", "alloc", restartBelowIssued, 0},
		{"restart-above-issued", "alloc", restartAboveIssued, 0},
		{"seq-add-alloc", "alloc", seqAddAlloc, 0},
		{"seq-add-alloc-aimed", "alloc", seqAddAllocAimed, 0},
		{"seq-term-alloc", "alloc", onRandomAlloc(seqTermAlloc), 0},
		{"seq-kill-alloc", "alloc", onRandomAlloc(seqKillAlloc), 0},
		{"seq-pause-alloc", "alloc", onRandomAlloc(seqPauseAlloc), 0},
		// The store lane: it stops the store leader and sets store clocks.
		{SeqFenceSkew, "store", seqFenceSkew, 0},
		// A lane of its own: an operator acts whatever the processes do.
		{"operator", "operator", operator, 0},
	} {
		m[f.Name] = f
	}
	for _, f := range append(diskFaults(), disasterFaults()...) {
		m[f.Name] = f
	}
	return m
}

func killLeader(ctx context.Context, e *Env, r *rand.Rand) error {
	l, err := e.leader(ctx)
	if e.skipped("kill-leader", err) {
		return nil
	}
	return killHoldRestart(ctx, e, r, "kill-leader", l, killLo, killHi)
}

// killFollower kills one follower while every other store runs: a
// minority fault. Two copies of its lane (Copies 2) would otherwise often
// kill both followers together, leaving the store with no quorum for as
// long as their holds overlap; then every reservation fails with an
// unknown outcome, and thousands of those (10,813 in one full run of the
// clock scenario) leave porcupine undecided. Losing the
// quorum is kill-all-stores' fault.
func killFollower(ctx context.Context, e *Env, r *rand.Rand) error {
	for _, s := range e.C.Stores {
		if !s.Running() {
			e.skipped("kill-follower", fmt.Errorf("%s is down: a second member down would take the quorum", s.Name))
			return nil
		}
	}
	f, _, err := e.follower(ctx, r)
	if e.skipped("kill-follower", err) {
		return nil
	}
	return killHoldRestart(ctx, e, r, "kill-follower", f, killLo, killHi)
}

// How long the plain kill faults keep a process down.
const killLo, killHi = 100 * time.Millisecond, 1500 * time.Millisecond

// killHoldRestart SIGKILLs p, holds lo..hi and starts it again.
func killHoldRestart(ctx context.Context, e *Env, r *rand.Rand, name string, p *launch.Proc, lo, hi time.Duration) error {
	if err := p.Kill(); err != nil {
		return err
	}
	e.Log.Inject(name, p.Name, "SIGKILL")
	d := hold(ctx, r, lo, hi)
	if err := p.Start(context.Background()); err != nil {
		return err
	}
	e.Log.Heal(name, p.Name, "restarted after %s", d.Round(time.Millisecond))
	return nil
}

func killAllStores(ctx context.Context, e *Env, r *rand.Rand) error {
	for _, s := range e.C.Stores {
		if err := s.Kill(); err != nil {
			return err
		}
	}
	e.Log.Inject("kill-all-stores", "stores", "SIGKILL all %d members", len(e.C.Stores))
	d := hold(ctx, r, 200*time.Millisecond, 2*time.Second)
	for _, s := range e.C.Stores {
		if err := s.Start(context.Background()); err != nil {
			return err
		}
	}
	e.Log.Heal("kill-all-stores", "stores", "restarted after %s", d.Round(time.Millisecond))
	// Let the cluster elect before the next fault, so faults do not just
	// pile onto a cluster that never recovers.
	if _, err := e.leader(ctx); err != nil {
		e.Log.Error("kill-all-stores", "stores", err)
	}
	return nil
}

func pauseLeader(ctx context.Context, e *Env, r *rand.Rand) error {
	l, err := e.leader(ctx)
	if e.skipped("pause-leader", err) {
		return nil
	}
	return pauseHold(ctx, e, r, "pause-leader", l, 2*e.ElectionTimeout, 6*e.ElectionTimeout)
}

func pauseFollower(ctx context.Context, e *Env, r *rand.Rand) error {
	f, _, err := e.follower(ctx, r)
	if e.skipped("pause-follower", err) {
		return nil
	}
	return pauseHold(ctx, e, r, "pause-follower", f, 2*e.ElectionTimeout, 6*e.ElectionTimeout)
}

// pauseHold SIGSTOPs p for lo..hi.
func pauseHold(ctx context.Context, e *Env, r *rand.Rand, name string, p *launch.Proc, lo, hi time.Duration) error {
	if err := p.Pause(); errors.Is(err, launch.ErrNotRunning) {
		e.Log.Skip(name, "%s not running", p.Name)
		return nil
	} else if err != nil {
		return err
	}
	e.Log.Inject(name, p.Name, "SIGSTOP")
	d := hold(ctx, r, lo, hi)
	if err := p.Resume(); err != nil && !errors.Is(err, launch.ErrNotRunning) {
		return err
	}
	e.Log.Heal(name, p.Name, "SIGCONT after %s", d.Round(time.Millisecond))
	if e.AfterResume != nil && p.Kind == launch.KindStore {
		e.AfterResume(p)
	}
	return nil
}

// memberReplace removes a follower from the configuration, kills it, wipes
// its data and adds it back with --join: it must catch up from a snapshot
// or the log without disturbing anything.
func memberReplace(ctx context.Context, e *Env, r *rand.Rand) error {
	e.memberMu.Lock()
	defer e.memberMu.Unlock()
	f, l, err := e.follower(ctx, r)
	if e.skipped("member-replace", err) {
		return nil
	}
	if err := e.removeMember(ctx, l, f); err != nil {
		e.Log.Skip("member-replace", "RemoveMember %s: %v", f.Name, err)
		return nil
	}
	e.Log.Inject("member-replace", f.Name, "removed via %s", l.Name)
	if err := f.Kill(); err != nil {
		return err
	}
	if err := f.Wipe(); err != nil {
		return err
	}
	f.Join = l.HTTPAddr
	hold(ctx, r, 100*time.Millisecond, 500*time.Millisecond)
	if err := f.Start(context.Background()); err != nil {
		return err
	}
	if err := e.waitReady(context.Background(), f, 30*time.Second); err != nil {
		e.Log.Error("member-replace", f.Name, fmt.Errorf("not ready after re-join: %w", err))
		return nil
	}
	e.Log.Heal("member-replace", f.Name, "wiped and re-joined through %s", l.Name)
	return nil
}

func randomAlloc(e *Env, r *rand.Rand) *launch.Proc {
	if len(e.C.Allocs) == 0 {
		return nil
	}
	return e.C.Allocs[r.Intn(len(e.C.Allocs))]
}

// onRandomAlloc makes a fault of f applied to a random allocsvr (none
// when the cluster has no allocsvr).
func onRandomAlloc(f func(ctx context.Context, e *Env, r *rand.Rand, a *launch.Proc) error) func(context.Context, *Env, *rand.Rand) error {
	return func(ctx context.Context, e *Env, r *rand.Rand) error {
		a := randomAlloc(e, r)
		if a == nil {
			return nil
		}
		return f(ctx, e, r, a)
	}
}

func killAlloc(ctx context.Context, e *Env, r *rand.Rand, a *launch.Proc) error {
	return killHoldRestart(ctx, e, r, "kill-alloc", a, killLo, killHi)
}

func killAllocSlow(ctx context.Context, e *Env, r *rand.Rand, a *launch.Proc) error {
	return killHoldRestart(ctx, e, r, "kill-alloc-slow", a, killLo, killHi)
}

func pauseAlloc(ctx context.Context, e *Env, r *rand.Rand, a *launch.Proc) error {
	return pauseHold(ctx, e, r, "pause-alloc", a, e.ElectionTimeout, 8*e.ElectionTimeout)
}

// clockJump steps an allocsvr's clock back a little (within the 5 ms
// tolerance, waited out), back a lot (refused with unavailable) or
// forward, holds, and steps it back to true time (itself a backward step
// after a forward jump).
func clockJump(ctx context.Context, e *Env, r *rand.Rand, a *launch.Proc) error {
	offsets := []time.Duration{-3 * time.Millisecond, -4 * time.Millisecond, -50 * time.Millisecond, -2 * time.Second, 20 * time.Millisecond, 1500 * time.Millisecond}
	off := offsets[r.Intn(len(offsets))]
	if err := e.SetClock(ctx, a, off); err != nil {
		e.Log.Error("clock-jump-alloc", a.Name, err)
		return nil
	}
	e.Log.Inject("clock-jump-alloc", a.Name, "clock offset %s", off)
	d := hold(ctx, r, 200*time.Millisecond, 2*time.Second)
	if err := e.SetClock(context.Background(), a, 0); err != nil {
		e.Log.Error("clock-jump-alloc", a.Name, err)
		return nil
	}
	e.Log.Heal("clock-jump-alloc", a.Name, "offset back to 0 after %s", d.Round(time.Millisecond))
	return nil
}

// clockBackRestart restarts an allocsvr whose clock is behind the last
// timestamp it issued: it must not issue anything at or below it.
func clockBackRestart(ctx context.Context, e *Env, r *rand.Rand, a *launch.Proc) error {
	off := -time.Duration(500+r.Intn(2500)) * time.Millisecond
	if err := a.Kill(); err != nil {
		return err
	}
	if err := startWithClockOffset(a, off.Milliseconds()); err != nil {
		return err
	}
	e.Log.Inject("clock-back-restart", a.Name, "SIGKILL, restarted with clock offset %s", off)
	d := hold(ctx, r, 500*time.Millisecond, 3*time.Second)
	if err := e.restoreTrueClock(a); err != nil {
		return err
	}
	e.Log.Heal("clock-back-restart", a.Name, "clock back to true time after %s", d.Round(time.Millisecond))
	return nil
}

// startWithClockOffset starts a with its faults-build clock shifted by offMs,
// leaving a.Env as it was so later plain restarts run on true time.
func startWithClockOffset(a *launch.Proc, offMs int64) error {
	saved := a.Env
	a.Env = append(append([]string{}, saved...), fmt.Sprintf("SEQSVR_FAULTS_CLOCK_OFFSET_MS=%d", offMs))
	err := a.Start(context.Background())
	a.Env = saved
	return err
}

// restoreTrueClock puts a back on true time: through the faults clock
// endpoint if it is up, else by a plain restart (not up yet, or it refused
// to start with the offset).
func (e *Env) restoreTrueClock(a *launch.Proc) error {
	if a.Running() {
		if err := e.SetClock(context.Background(), a, 0); err != nil {
			_ = a.Kill()
		}
	}
	if !a.Running() {
		return a.Start(context.Background())
	}
	return nil
}
