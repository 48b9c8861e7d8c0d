package nemesis

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// LoseDisk is the lost-disk fault's name.
const LoseDisk = "lose-disk"

// How long the lost-disk fault lets writes commit while one follower is
// paused (they reach the leader and the member about to lose its disk
// only), and how long the paused member and the wiped one stay alone
// before the old leader comes back: the window in which a wiped member
// that votes on what it forgot lets the paused one lead without those
// writes.
const (
	loseDiskCommitLo, loseDiskCommitHi = 500 * time.Millisecond, 1500 * time.Millisecond
	loseDiskAloneLo, loseDiskAloneHi   = 1500 * time.Millisecond, 3 * time.Second
	// loseDiskReady bounds the wait for every member to serve again: the
	// wiped one rejoins as a non-voter and catches up.
	loseDiskReady = 60 * time.Second
)

// loseDisk is a voter losing its disk while the cluster is degraded, the
// textbook way to break Raft: a follower is paused (SIGSTOP) and writes
// commit on the leader and the other follower alone; that follower is
// SIGKILLed and its data dir deleted, and the leader is SIGKILLed. The
// wiped member is started again with the flags it had (--peers, --join
// or the StatefulSet's ordinal mode: whatever the cluster launched it
// with), then the paused one resumes, and only a moment later the old
// leader restarts. The only members up in between are one that lacks
// the writes and one that forgot them: a wiped member that bootstraps or
// votes at once lets the paused one lead and hand out the acknowledged
// ranges again, which the segment, per-key and linearizability checkers
// see. A correct member waits, is taken back by the leader as a
// non-voter and promoted once caught up.
//
// Each run wipes the follower wiped least often so far, so a run of the
// scenario loses the disk of different members.
func loseDisk(ctx context.Context, e *Env, r *rand.Rand) error {
	e.memberMu.Lock()
	defer e.memberMu.Unlock()
	if len(e.C.Stores) < 3 {
		e.Log.Skip(LoseDisk, "needs three members, have %d", len(e.C.Stores))
		return nil
	}
	for _, s := range e.C.Stores {
		if !s.Running() || s.Paused() {
			e.Log.Skip(LoseDisk, "%s is down or paused", s.Name)
			return nil
		}
	}
	l, err := e.leader(ctx)
	if e.skipped(LoseDisk, err) {
		return nil
	}
	// A member re-added and not yet promoted is no voter: losing another
	// disk then loses one of two voters, which no cluster survives.
	if err := e.allVoters(ctx, l); e.skipped(LoseDisk, err) {
		return nil
	}
	var fs []*launch.Proc
	for _, s := range e.C.Stores {
		if s != l {
			fs = append(fs, s)
		}
	}
	r.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
	wiped := fs[0]
	for _, f := range fs[1:] {
		if e.wipes[f.Name] < e.wipes[wiped.Name] {
			wiped = f
		}
	}
	paused := fs[0]
	if paused == wiped {
		paused = fs[1]
	}

	if err := paused.Pause(); err != nil {
		return err
	}
	e.Log.Inject(LoseDisk, paused.Name, "SIGSTOP (the member that will lack the writes)")
	before := e.commitIndex(ctx, l)
	hold(ctx, r, loseDiskCommitLo, loseDiskCommitHi)
	// One recorded reservation at least, acknowledged while paused lags.
	if e.Reserve != nil {
		e.Reserve(ctx, l)
	}
	after := e.commitIndex(context.WithoutCancel(ctx), l)

	if err := wiped.Kill(); err != nil {
		return err
	}
	if err := wiped.Wipe(); err != nil {
		return err
	}
	if err := l.Kill(); err != nil {
		return err
	}
	if e.wipes == nil {
		e.wipes = map[string]int{}
	}
	e.wipes[wiped.Name]++
	e.Log.Inject(LoseDisk, wiped.Name, "SIGKILL, data dir deleted (leader %s committed %d..%d while %s was paused); leader %s SIGKILLed",
		l.Name, before, after, paused.Name, l.Name)

	if err := wiped.Start(context.Background()); err != nil {
		return err
	}
	if err := paused.Resume(); err != nil {
		return err
	}
	// One heal, at the end, closes both injections: the store has no
	// quorum until the old leader is back, and guarantee 9's check
	// excuses per-key outages until a fault's heal.
	resumed := e.Log.Since()
	if e.AfterResume != nil {
		e.AfterResume(paused)
	}
	d := hold(ctx, r, loseDiskAloneLo, loseDiskAloneHi)
	if err := l.Start(context.Background()); err != nil {
		return err
	}
	start := time.Now()
	for _, s := range []*launch.Proc{l, paused, wiped} {
		if err := e.waitReady(context.Background(), s, loseDiskReady); err != nil {
			e.Log.Error(LoseDisk, s.Name, fmt.Errorf("not ready after the lost disk: %w", err))
			e.Log.Heal(LoseDisk, paused.Name, "gave up waiting")
			return nil
		}
	}
	ready := time.Since(start)
	if err := e.waitVoters(ctx, loseDiskReady); err != nil {
		e.Log.Error(LoseDisk, wiped.Name, err)
		e.Log.Heal(LoseDisk, paused.Name, "gave up waiting")
		return nil
	}
	e.Log.Heal(LoseDisk, paused.Name, "SIGCONT at %s with %s restarted (%s); old leader %s restarted %s later; every member ready %s after that, %s a voter again %s later",
		resumed.Round(time.Millisecond), wiped.Name, flagsOf(wiped), l.Name, d.Round(time.Millisecond), ready.Round(time.Millisecond), wiped.Name, (time.Since(start) - ready).Round(time.Millisecond))
	return nil
}

// allVoters checks that the leader l's configuration holds every store as
// a voter.
func (e *Env) allVoters(ctx context.Context, l *launch.Proc) error {
	st, err := e.C.Status(ctx, l)
	if err != nil {
		return err
	}
	voters := map[string]bool{}
	for _, m := range st.GetMembers() {
		voters[m.GetId()] = m.GetSuffrage() == "voter"
	}
	for _, s := range e.C.Stores {
		if !voters[s.NodeID] {
			return fmt.Errorf("%s is not a voter of leader %s yet", s.Name, l.Name)
		}
	}
	return nil
}

// waitVoters waits until the leader holds every store as a voter: the
// leader promotes a re-added member once it has caught up.
func (e *Env) waitVoters(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	var last error
	for {
		l, err := e.leader(ctx)
		if err == nil {
			err = e.allVoters(ctx, l)
		}
		if err == nil {
			return nil
		}
		last = err
		if sleep(ctx, 100*time.Millisecond); ctx.Err() != nil {
			return fmt.Errorf("not every member a voter after %s: %w", d, last)
		}
	}
}

// flagsOf names how p is told about its cluster.
func flagsOf(p *launch.Proc) string {
	switch {
	case p.Ordinal != "":
		return "--ordinal-domain " + p.Ordinal
	case p.Join != "":
		return "--join " + p.Join
	default:
		return "--peers"
	}
}

// commitIndex is p's commit index (0 when it does not answer).
func (e *Env) commitIndex(ctx context.Context, p *launch.Proc) uint64 {
	st, err := e.C.Status(ctx, p)
	if err != nil {
		return 0
	}
	return st.GetCommitIndex()
}
