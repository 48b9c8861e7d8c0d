package nemesis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// The aimed faults put the snowflake side where its safety margins are
// the only thing between it and a repeated ID, instead of waiting for a
// random schedule to land there:
//
//   - skewed-takeover: a worker-ID takeover the moment the old holder's
//     lease expires, with the old holder's clock ahead and the new one's
//     behind, both inside the tolerance. Only the store's takeover floor
//     (the old holder's last report plus one lease TTL) keeps the new
//     holder's timestamps above the old one's last IDs.
//   - pause-takeover: the holder SIGSTOPped past its lease, a twin takes
//     the worker ID over, and the holder is resumed (SIGCONT) while the
//     twin serves: it must find itself fenced, whatever its clock says.
//   - restart-below-issued / restart-above-issued: an allocsvr cut off
//     from the store (with namespaces) keeps issuing past its last report
//     to the store, is killed, and restarts with its clock just below (or
//     just above) the last timestamp it issued, read from the history.
//     Below, only the data-dir high-water mark keeps it from issuing
//     those timestamps again.

// skewAhead is the clock skew the restart-aimed faults give an allocsvr
// before cutting it off: inside the allocsvrs' 1 s tolerance.
const skewAhead = 850 * time.Millisecond

// twinRenew is the twin's --snowflake-renew-interval in skewed-takeover:
// its registration retries that often, so it takes the worker ID over
// within about that long of the lease's expiry (the default 300 ms would
// eat a third of the window the skews open).
const twinRenew = "100ms"

// skewedTakeover: see the list above. It is aimed at the clock tolerance
// (--snowflake-max-clock-offset, MarginSnowflakeClock). Every other
// injection puts both clocks 10% inside it (the old holder ahead, the twin
// behind), where the takeover floor alone keeps the twin's timestamps
// above the old holder's. The others put the twin's clock ahead, 10% past
// what registration is sure to refuse (the tolerance plus the
// measurement's error, a quarter of it): it must refuse the twin, which
// then issues no snowflake ID (the margin-refusals checker reads the
// margin event's window). It needs namespaces (the old holder must keep
// serving, cut off from the store, until its own fence); without them it
// skips.
func skewedTakeover(ctx context.Context, e *Env, r *rand.Rand) error {
	const name = "skewed-takeover"
	if e.Net == nil {
		e.Log.Skip(name, "needs network namespaces (the old holder must serve while cut off)")
		return nil
	}
	e.twinMu.Lock()
	defer e.twinMu.Unlock()
	a := randomAlloc(e, r)
	if a == nil {
		return nil
	}
	tol := cmp.Or(e.SnowflakeMaxClockOffset, time.Second)
	// Inside and outside take turns, inside first: each run of the
	// scenario hits both sides however few times the fault runs.
	side := Inside
	if e.skewedRuns%2 == 1 {
		side = Outside
	}
	e.skewedRuns++
	// Registration measures the offset to within half a round trip, and
	// trusts no round trip over half the tolerance: what it is sure to
	// refuse starts a quarter of the tolerance past it.
	limit := tol
	if side == Outside {
		limit = tol + tol/4
	}
	// Outside, the twin's clock is ahead, not behind: a twin that got
	// through would serve at once (its clock above the takeover floor),
	// where one behind would wait for its clock to reach the floor, and
	// could wait past the fault.
	ahead, twinOff := Aim(tol, Inside), -Aim(tol, Inside)
	if side == Outside {
		twinOff = Aim(limit, Outside)
	}
	if err := e.SetClock(ctx, a, ahead); err != nil {
		e.Log.Error(name, a.Name, err)
		return nil
	}
	// Two renewals report the skewed clock to the store.
	sleep(ctx, 700*time.Millisecond)
	stores := names(e.C.Stores)
	if err := e.Net.Cut([]string{a.Name}, stores); err != nil {
		_ = e.Net.Uncut([]string{a.Name}, stores)
		return err
	}
	cut := time.Now()
	stopOld := e.probeSnowflake(ctx, a)
	defer stopOld()
	e.Log.Inject(name, a.Name, "clock %+v, cut from all stores: serves until its own fence", ahead)
	// Start the twin before the lease ends: it retries its registration
	// (every 100 ms) until the store lets it take over, so it takes the
	// worker ID over within moments of the expiry.
	sleep(ctx, e.LeaseTTL-time.Second-time.Since(cut))
	since := e.Log.Since()
	twin, err := e.startTwin(ctx, a, twinOff, "--snowflake-renew-interval", twinRenew)
	if err != nil {
		_ = e.Net.Uncut([]string{a.Name}, stores)
		return err
	}
	if twin != nil {
		e.Log.Inject(name, twin.Name, "twin with clock %v ready %s after the cut; takes --node-id %s's worker ID over once the lease expires",
			twinOff, time.Since(cut).Round(time.Millisecond), a.NodeID)
		stopTwin := e.probeSnowflake(ctx, twin)
		hold(ctx, r, 2*time.Second, 3*time.Second)
		stopTwin()
		stopOld()
		if side == Outside {
			e.Log.MarginRefused(name, twin.Name, MarginSnowflakeClock, twinOff, limit, RefusesSnowflake, since)
		} else {
			e.Log.Margin(name, twin.Name, MarginSnowflakeClock, side, -twinOff, tol)
			// The two holders' clocks differ by 90% of the most the
			// tolerance lets through (twice it): the twin's clock reads
			// well below the old holder's last timestamps, and only the
			// takeover floor lifts it above them.
			e.Log.Margin(name, twin.Name, MarginSnowflakeTakeover, side, ahead-twinOff, 2*tol)
		}
		e.stopTwin(twin)
	}
	if err := e.Net.Uncut([]string{a.Name}, stores); err != nil {
		return err
	}
	_ = e.SetClock(context.Background(), a, 0)
	return e.restartOriginal(ctx, name, a, "twin killed, clock back to true time, original restarted")
}

// pauseTakeover: see the list above. It works with or without namespaces.
func pauseTakeover(ctx context.Context, e *Env, r *rand.Rand) error {
	const name = "pause-takeover"
	e.twinMu.Lock()
	defer e.twinMu.Unlock()
	a := randomAlloc(e, r)
	if a == nil {
		return nil
	}
	if err := a.Pause(); errors.Is(err, launch.ErrNotRunning) {
		e.Log.Skip(name, "%s not running", a.Name)
		return nil
	} else if err != nil {
		return err
	}
	e.Log.Inject(name, a.Name, "SIGSTOP past its lease (%s)", e.LeaseTTL)
	sleep(ctx, e.LeaseTTL+time.Second)
	twin, err := e.startTwin(ctx, a, 0)
	if err != nil {
		_ = a.Resume()
		return err
	}
	if err := a.Resume(); err != nil && !errors.Is(err, launch.ErrNotRunning) {
		return err
	}
	if twin != nil {
		e.Log.Inject(name, a.Name, "SIGCONT while the twin %s serves its worker ID", twin.Name)
		hold(ctx, r, 2*time.Second, 3*time.Second)
		e.stopTwin(twin)
	}
	return e.restartOriginal(ctx, name, a, "twin killed, original restarted")
}

// startTwin starts a second process with a's --node-id and the given
// clock offset and hands it to the workload once it is ready. A twin that
// does not get ready is killed and nil is returned (logged).
func (e *Env) startTwin(ctx context.Context, a *launch.Proc, offset time.Duration, args ...string) (*launch.Proc, error) {
	twin, err := e.C.NewAlloc(a.Name+"t", a.NodeID)
	if err != nil {
		return nil, err
	}
	twin.ExtraArgs = append(twin.ExtraArgs, args...)
	if offset != 0 {
		twin.Env = append(append([]string{}, twin.Env...), fmt.Sprintf("SEQSVR_FAULTS_CLOCK_OFFSET_MS=%d", offset.Milliseconds()))
	}
	if err := twin.Start(context.Background()); err != nil {
		e.C.DropAlloc(twin)
		return nil, err
	}
	if err := e.waitReady(ctx, twin, 15*time.Second); err != nil {
		e.Log.Error("twin", twin.Name, fmt.Errorf("twin not ready: %w", err))
		_ = twin.Kill()
		e.C.DropAlloc(twin)
		return nil, nil
	}
	if e.AddAlloc != nil {
		e.AddAlloc(twin)
	}
	return twin, nil
}

func (e *Env) stopTwin(twin *launch.Proc) {
	if e.RemoveAlloc != nil {
		e.RemoveAlloc(twin)
	}
	_ = twin.Kill()
	e.C.DropAlloc(twin)
}

// restartOriginal waits out the twin's lease and restarts a, so it
// registers afresh.
func (e *Env) restartOriginal(ctx context.Context, name string, a *launch.Proc, what string) error {
	sleep(ctx, e.LeaseTTL+500*time.Millisecond)
	if err := a.Restart(context.Background()); err != nil {
		return err
	}
	if err := e.waitReady(ctx, a, 20*time.Second); err != nil {
		e.Log.Error(name, a.Name, err)
	}
	e.Log.Heal(name, a.Name, "%s", what)
	return nil
}

// restartBelowIssued and restartAboveIssued restart an allocsvr with its
// clock aimed just below or just above the last snowflake timestamp it
// issued (see the list above).
func restartBelowIssued(ctx context.Context, e *Env, r *rand.Rand) error {
	return restartAimed(ctx, e, r, "restart-below-issued", true)
}

func restartAboveIssued(ctx context.Context, e *Env, r *rand.Rand) error {
	return restartAimed(ctx, e, r, "restart-above-issued", false)
}

// startupGuess is about how long an allocsvr takes from exec to its
// snowflake registration.
const startupGuess = 300 * time.Millisecond

// maxAimedOffset keeps an aimed clock inside the allocsvr's 1 s
// tolerance, with room for the measurement's error.
const maxAimedOffset = 850 * time.Millisecond

// restartAimed: before the kill the allocsvr's clock runs skewAhead fast
// (reported to the store by its renewals, then frozen there by the cut
// while it keeps issuing), so the last issued timestamp L is about
// skewAhead past the kill and the store's record about 1.5 s behind L.
// Below: the restart's clock is maxAimedOffset behind true time, which
// puts it between the two for any registration within about 1.5 s of the
// kill. Above: the clock aims at L + 50 ms.
func restartAimed(ctx context.Context, e *Env, r *rand.Rand, name string, below bool) error {
	if e.LastSnowflakeMs == nil {
		return nil
	}
	a := randomAlloc(e, r)
	if a == nil || !a.Running() {
		return nil
	}
	e.twinMu.Lock() // not while a twin holds this node's worker ID
	defer e.twinMu.Unlock()
	// While a is up: the first call learns the ID layout from it.
	e.LastSnowflakeMs(a)
	if err := e.SetClock(ctx, a, skewAhead); err != nil {
		e.Log.Error(name, a.Name, err)
		return nil
	}
	sleep(ctx, 700*time.Millisecond) // two renewals report it
	how := fmt.Sprintf("clock %+v, ", skewAhead)
	stores := names(e.C.Stores)
	if e.Net != nil {
		// Cut off, it keeps issuing (up to its fence, 2 s after its last
		// renewal) while the store's record of its timestamps stands
		// still: the window between the two is what the high-water mark
		// guards.
		if err := e.Net.Cut([]string{a.Name}, stores); err != nil {
			_ = e.Net.Uncut([]string{a.Name}, stores)
			return err
		}
		how += "cut from the stores for 1.5s, "
		sleep(ctx, 1500*time.Millisecond)
	}
	if err := a.Kill(); err != nil {
		return err
	}
	if e.Net != nil {
		if err := e.Net.Uncut([]string{a.Name}, stores); err != nil {
			return err
		}
	}
	last, ok := e.LastSnowflakeMs(a)
	if !ok {
		if err := a.Start(context.Background()); err != nil {
			return err
		}
		e.Log.Skip(name, "%s issued no snowflake ID in its last life; restarted plainly", a.Name)
		return nil
	}
	off := -maxAimedOffset.Milliseconds()
	if !below {
		off = last + 50 - time.Now().Add(startupGuess).UnixMilli()
		off = max(min(off, maxAimedOffset.Milliseconds()), -maxAimedOffset.Milliseconds())
	}
	if err := startWithClockOffset(a, off); err != nil {
		return err
	}
	e.Log.Inject(name, a.Name, "%sSIGKILL; last issued timestamp %d (now %d); restarted with clock offset %dms",
		how, last, time.Now().UnixMilli(), off)
	// Hold from its readiness, not its exec: a slow start must not end
	// the fault before the allocsvr registered.
	if err := e.waitReady(ctx, a, 15*time.Second); err != nil {
		e.Log.Error(name, a.Name, err)
	}
	d := hold(ctx, r, 1500*time.Millisecond, 2500*time.Millisecond)
	if err := e.restoreTrueClock(a); err != nil {
		return err
	}
	e.Log.Heal(name, a.Name, "clock back to true time after %s", d.Round(time.Millisecond))
	return nil
}
