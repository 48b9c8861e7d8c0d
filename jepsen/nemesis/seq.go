package nemesis

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
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
	return addExtraAlloc(ctx, e, r, "seq-add-alloc", true)
}

// seqAddAllocAimed is seq-add-alloc aimed at the handover: it starts the
// extra allocsvr just after the allocsvr that owns the last section of
// Env.SeqSpace renewed its per-key lease as that owner (the extra
// allocsvr, named after the originals, takes the last sections). That
// owner has served the section just before the join and hears of the
// move only one heartbeat interval after it, the longest it can: a store
// that moves a live owner's sections at once (the seq-no-handover-wait
// bug) lets both serve the same keys for most of that interval, where a
// correct one makes the joiner wait for the release. It always stops the
// extra allocsvr gracefully: a release before the old owner's next
// heartbeat hands the sections back to the memory it still holds.
func seqAddAllocAimed(ctx context.Context, e *Env, r *rand.Rand) error {
	if !e.awaitOwnerRenewal(ctx) {
		if ctx.Err() != nil {
			return nil
		}
		e.Log.Error("seq-add-alloc-aimed", ExtraAlloc, fmt.Errorf("no owner renewal of space %q's last section seen in time; starting anyway", e.SeqSpace))
	}
	return addExtraAlloc(ctx, e, r, "seq-add-alloc-aimed", false)
}

// addExtraAlloc is the body of seq-add-alloc and its aimed form, logged as
// fault name; with mayKill one stop in three is a SIGKILL, else SIGTERM.
func addExtraAlloc(ctx context.Context, e *Env, r *rand.Rand, name string, mayKill bool) error {
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
		e.Log.Error(name, p.Name, fmt.Errorf("not ready: %w", err))
		return nil
	}
	if e.AddAlloc != nil {
		e.AddAlloc(p)
	}
	e.Log.Inject(name, p.Name, "started: sections move to it")
	d := hold(ctx, r, time.Second, 4*time.Second)
	if e.RemoveAlloc != nil {
		e.RemoveAlloc(p)
	}
	how := "SIGTERM"
	if mayKill && r.Intn(3) == 0 {
		how = "SIGKILL"
		err = p.Kill()
	} else {
		err = p.Stop()
	}
	if err != nil {
		return err
	}
	e.Log.Heal(name, p.Name, "%s after %s", how, d.Round(time.Millisecond))
	return nil
}

// awaitOwnerRenewal waits until the owner of Env.SeqSpace's last section,
// an allocsvr other than the extra one with no handover pending, renews
// its per-key lease (its lease_expires_ms in the store's table grows)
// after it was first seen owning the section: that heartbeat's answer
// told it that it owns the section. It gives up (false) after two lease
// TTLs and a few seconds, or when ctx ends.
func (e *Env) awaitOwnerRenewal(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*e.SeqLeaseTTL+5*time.Second)
	defer cancel()
	owner, seen := "", int64(0)
	for ctx.Err() == nil {
		if last := e.lastSection(ctx); last != nil {
			switch o, exp := last.GetOwner(), last.GetLeaseExpiresMs(); {
			case o == "" || o == ExtraAlloc || last.GetNextOwner() != "":
				owner = ""
			case o != owner:
				owner, seen = o, exp
			case exp > seen:
				return true
			}
		}
		sleep(ctx, 20*time.Millisecond)
	}
	return false
}

// lastSection is the routing table's run holding Env.SeqSpace's last
// section, read through the leader; nil if the read failed.
func (e *Env) lastSection(ctx context.Context) *seqsvrv1.SectionRange {
	l, err := e.leader(ctx)
	if err != nil {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	res, err := e.C.StoreClient(l).GetRouting(cctx, connect.NewRequest(&seqsvrv1.GetRoutingRequest{Space: e.SeqSpace}))
	if err != nil {
		return nil
	}
	runs := res.Msg.GetSections()
	if len(runs) == 0 {
		return nil
	}
	return runs[len(runs)-1]
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
