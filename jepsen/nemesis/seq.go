package nemesis

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// The per-key sequence faults move sections between allocsvrs in every
// way the store allows: an allocsvr joins (the store rebalances, the
// current owners must release first), one leaves gracefully (SIGTERM: it
// stops serving and releases at once), one dies (its sections wait for
// its lease to expire), one stalls past its lease (SIGSTOP: it must have
// fenced itself before the store gave its sections away, and must not
// serve from its memory when it wakes).

// ExtraAlloc is the name and node ID of the allocsvr seq-add-alloc
// starts; the harness gives it a network namespace of its own.
const ExtraAlloc = "ax"

// seqAddAlloc starts an extra allocsvr, lets clients use it while
// sections move to it, and stops it again, gracefully or with SIGKILL.
func seqAddAlloc(ctx context.Context, e *Env, r *rand.Rand) error {
	e.extraMu.Lock()
	defer e.extraMu.Unlock()
	p, err := e.C.NewAlloc(ExtraAlloc, ExtraAlloc)
	if err != nil {
		return err
	}
	defer e.C.DropAlloc(p)
	if err := p.Start(context.Background()); err != nil {
		return err
	}
	if err := e.waitReady(ctx, p, 15*time.Second); err != nil {
		_ = p.Kill()
		e.Log.Error("seq-add-alloc", p.Name, fmt.Errorf("not ready: %w", err))
		return nil
	}
	if e.AddAlloc != nil {
		e.AddAlloc(p)
	}
	e.Log.Inject("seq-add-alloc", p.Name, "started: sections move to it")
	d := hold(ctx, r, time.Second, 4*time.Second)
	if e.RemoveAlloc != nil {
		e.RemoveAlloc(p)
	}
	how := "SIGTERM"
	if r.Intn(3) == 0 {
		how = "SIGKILL"
		err = p.Kill()
	} else {
		err = p.Stop()
	}
	if err != nil {
		return err
	}
	e.Log.Heal("seq-add-alloc", p.Name, "%s after %s", how, d.Round(time.Millisecond))
	return nil
}

// seqTermAlloc stops an allocsvr gracefully: its sections move to the
// others at once; it comes back after a short while and takes its share.
func seqTermAlloc(ctx context.Context, e *Env, r *rand.Rand, a *launch.Proc) error {
	if err := a.Stop(); err != nil {
		return err
	}
	e.Log.Inject("seq-term-alloc", a.Name, "SIGTERM")
	d := hold(ctx, r, 300*time.Millisecond, 2*time.Second)
	if err := a.Start(context.Background()); err != nil {
		return err
	}
	e.Log.Heal("seq-term-alloc", a.Name, "restarted after %s", d.Round(time.Millisecond))
	return nil
}

// seqKillAlloc SIGKILLs an allocsvr and keeps it down past its per-key
// lease, so the others take its sections.
func seqKillAlloc(ctx context.Context, e *Env, r *rand.Rand, a *launch.Proc) error {
	return killHoldRestart(ctx, e, r, "seq-kill-alloc", a, e.SeqLeaseTTL+500*time.Millisecond, e.SeqLeaseTTL+2*time.Second)
}

// seqPauseAlloc SIGSTOPs an allocsvr past its per-key lease: the others
// take its sections while it sleeps; when it wakes it must not serve them.
func seqPauseAlloc(ctx context.Context, e *Env, r *rand.Rand, a *launch.Proc) error {
	return pauseHold(ctx, e, r, "seq-pause-alloc", a, e.SeqLeaseTTL+500*time.Millisecond, e.SeqLeaseTTL+2*time.Second)
}
