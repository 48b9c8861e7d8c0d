package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// TwinReconnected is the detail of twin-takeover's middle heal: the cut
// is healed but the fault goes on (the twin serves, then is SIGKILLed and
// its sections wait out its lease) until the heal that restarts the
// original. Readers of the log that model recovery key on it.
const TwinReconnected = "reconnected while the twin serves"

// twinTakeover cuts an allocsvr off the store (a partition, or SIGSTOP
// without namespaces) until its worker lease has expired, then starts a
// second process with the same --node-id, which takes the worker ID over.
// Then the first is reconnected while the twin serves: the first must have
// fenced itself, so no two live processes serve one worker ID.
func twinTakeover(ctx context.Context, e *Env, r *rand.Rand) error {
	e.twinMu.Lock()
	defer e.twinMu.Unlock()
	a := randomAlloc(e, r)
	if a == nil {
		return nil
	}
	how := "SIGSTOP"
	if e.Net != nil {
		how = "cut from all stores"
		if err := e.Net.Cut([]string{a.Name}, names(e.C.Stores)); err != nil {
			_ = e.Net.Heal()
			return err
		}
	} else if err := a.Pause(); err != nil {
		return err
	}
	e.Log.Inject("twin-takeover", a.Name, "%s until its lease (%s) expires", how, e.LeaseTTL)
	sleep(ctx, e.LeaseTTL+1500*time.Millisecond)

	twin, err := e.C.NewAlloc(a.Name+"t", a.NodeID)
	if err != nil {
		return err
	}
	heal := func() error {
		if e.Net != nil {
			return e.Net.Heal()
		}
		if err := a.Resume(); !errors.Is(err, launch.ErrNotRunning) {
			return err
		}
		return nil
	}
	if err := twin.Start(context.Background()); err != nil {
		_ = heal()
		return err
	}
	if err := e.waitReady(ctx, twin, 15*time.Second); err != nil {
		e.Log.Error("twin-takeover", twin.Name, fmt.Errorf("twin not ready: %w", err))
	} else {
		e.Log.Inject("twin-takeover", twin.Name, "twin with --node-id %s serving", a.NodeID)
		if e.AddAlloc != nil {
			e.AddAlloc(twin)
		}
	}
	if err := heal(); err != nil {
		return err
	}
	e.Log.Heal("twin-takeover", a.Name, "%s", TwinReconnected)
	hold(ctx, r, 2*time.Second, 4*time.Second)

	if e.RemoveAlloc != nil {
		e.RemoveAlloc(twin)
	}
	if err := twin.Kill(); err != nil {
		return err
	}
	e.C.DropAlloc(twin)
	// The twin's lease must lapse before the original can hold the worker
	// ID again; restart it so it registers afresh.
	sleep(ctx, e.LeaseTTL+500*time.Millisecond)
	if err := a.Restart(context.Background()); err != nil {
		return err
	}
	if err := e.waitReady(ctx, a, 20*time.Second); err != nil {
		e.Log.Error("twin-takeover", a.Name, err)
	}
	e.Log.Heal("twin-takeover", a.Name, "twin killed, original restarted")
	return nil
}
