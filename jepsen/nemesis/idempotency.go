package nemesis

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/jepsen/history"
)

// The idempotency faults aim at ReserveSegment's request_id: each makes a
// reservation, does something to the store that a retry must survive, and
// re-sends the request_id (history.Resend). checker.Idempotent then demands
// the first success's segment back; the store model never sees a re-send,
// so one that reserved anew also breaks linearizability.

// leaderChangeResend starts a reservation on the store leader and, a few
// milliseconds into it, kills or pauses that leader so another takes
// over; then it re-sends the request_id through the new leader and, once
// the old one is back, through the old one. Whatever the first call's
// outcome (answered, lost with the leader, committed by the old leader
// and not answered), both re-sends must name one segment, and the first
// answer's if there was one.
func leaderChangeResend(ctx context.Context, e *Env, r *rand.Rand) error {
	const name = "leader-change-resend"
	if e.Reserve == nil || e.Resend == nil {
		return nil
	}
	l, err := e.leader(ctx)
	if e.skipped(name, err) {
		return nil
	}
	done := make(chan *history.Op, 1)
	go func() { done <- e.Reserve(context.Background(), l) }()
	sleep(ctx, time.Duration(r.Intn(8))*time.Millisecond)
	pause := r.Intn(2) == 0
	how := "SIGKILL"
	if pause {
		how = "SIGSTOP"
		err = l.Pause()
	} else {
		err = l.Kill()
	}
	if err != nil {
		<-done
		e.Log.Skip(name, "%s %s: %v", how, l.Name, err)
		return nil
	}
	e.Log.Inject(name, l.Name, "%s during a reservation through it", how)
	if pause {
		// Held past an election: the reservation's call times out while
		// the old leader sleeps.
		sleep(ctx, 4*e.ElectionTimeout)
	}
	orig := <-done
	nl, lerr := e.newLeader(ctx, l)
	var answers []string
	if orig.NoEffect() || orig.Answered() {
		answers = append(answers, "first call had no effect ("+orig.Code+"): nothing to re-send")
	} else if lerr == nil {
		answers = append(answers, "via new leader "+nl.Name+": "+answer(e.Resend(ctx, nl, orig, "leader-change")))
	} else {
		answers = append(answers, "no new leader: "+lerr.Error())
	}
	if pause {
		if err := l.Resume(); err != nil {
			return err
		}
	} else if err := l.Start(context.Background()); err != nil {
		return err
	}
	if err := e.waitReady(ctx, l, 20*time.Second); err != nil {
		e.Log.Error(name, l.Name, fmt.Errorf("not ready again: %w", err))
	} else if !orig.NoEffect() && !orig.Answered() {
		answers = append(answers, "via old leader "+l.Name+": "+answer(e.Resend(ctx, l, orig, "leader-change")))
	}
	e.Log.Heal(name, l.Name, "first call %s; re-sends %s", answer(orig), strings.Join(answers, "; "))
	return nil
}

// snapshotResend makes a reservation, waits until every member has taken
// a snapshot after it (the scenario sets a low --snapshot-threshold), kills
// every member and restarts them, so they come back from that snapshot
// (and only the log after it), then re-sends the request_id through each
// member: the request record must have travelled in the snapshot.
func snapshotResend(ctx context.Context, e *Env, r *rand.Rand) error {
	const name = "snapshot-resend"
	if e.Reserve == nil || e.Resend == nil {
		return nil
	}
	s := e.C.Stores[r.Intn(len(e.C.Stores))]
	orig := e.Reserve(ctx, s)
	if !orig.OK {
		e.Log.Skip(name, "reservation through %s failed: %s", s.Name, orig.Err)
		return nil
	}
	after := time.Now()
	snapped := 0
	deadline := time.Now().Add(8 * time.Second)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		snapped = 0
		for _, m := range e.C.Stores {
			if snapshotSince(m, after) {
				snapped++
			}
		}
		if snapped == len(e.C.Stores) {
			break
		}
		sleep(ctx, 100*time.Millisecond)
	}
	for _, m := range e.C.Stores {
		if err := m.Kill(); err != nil {
			return err
		}
	}
	e.Log.Inject(name, "stores", "reserved [%d, %d] (request_id %s); SIGKILL all %d members, %d of them with a snapshot taken after it",
		orig.First, orig.Last, orig.RequestID, len(e.C.Stores), snapped)
	hold(ctx, r, 200*time.Millisecond, time.Second)
	for _, m := range e.C.Stores {
		if err := m.Start(context.Background()); err != nil {
			return err
		}
	}
	var answers []string
	if _, err := e.leader(ctx); err != nil {
		answers = append(answers, "no leader: "+err.Error())
	}
	for _, m := range e.C.Stores {
		answers = append(answers, m.Name+": "+answer(e.Resend(ctx, m, orig, "snapshot")))
	}
	e.Log.Heal(name, "stores", "restarted; re-sends %s", strings.Join(answers, "; "))
	return nil
}

// snapshotSince reports whether p's data dir holds a Raft snapshot
// written after t (hashicorp/raft's file snapshot store: snapshots/<id>/).
func snapshotSince(p *launch.Proc, t time.Time) bool {
	ents, err := os.ReadDir(filepath.Join(p.DataDir, "snapshots"))
	if err != nil {
		return false
	}
	for _, en := range ents {
		if strings.HasSuffix(en.Name(), ".tmp") {
			continue
		}
		if fi, err := os.Stat(filepath.Join(p.DataDir, "snapshots", en.Name(), "meta.json")); err == nil && fi.ModTime().After(t) {
			return true
		}
	}
	return false
}

// newLeader waits for a leader other than old.
func (e *Env) newLeader(ctx context.Context, old *launch.Proc) (*launch.Proc, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := e.leader(ctx)
		if err == nil && l != old {
			return l, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err == nil {
				err = fmt.Errorf("%s still leads", old.Name)
			}
			return nil, err
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

func answer(op *history.Op) string {
	if op.OK {
		return fmt.Sprintf("[%d, %d]", op.First, op.Last)
	}
	msg := op.Err
	if len(msg) > 80 {
		msg = msg[:80] + "..."
	}
	return "error " + msg
}
