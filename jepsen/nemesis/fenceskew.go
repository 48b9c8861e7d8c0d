package nemesis

import (
	"cmp"
	"context"
	"math/rand"
	"time"
)

// fenceSkewTakeover ("fence-skew-takeover") is aimed at the snowflake
// fence margin (--snowflake-fence-margin, MarginSnowflakeFence). An
// allocsvr stops issuing snowflake IDs TTL minus the margin after sending
// its last successful renewal, on its own monotonic clock, while the store
// lets another process take the worker ID over once the lease, stamped by
// the leader's wall clock, has expired by the leader's wall clock. The
// margin covers a store leader whose clock steps ahead between the two:
// the lease then expires early in real time, and the holder must have
// stopped by then.
//
// The fault: an allocsvr cut off from every store (it serves on until its
// fence), every store's clock stepped ahead by 90% of the margin, and a
// twin with the same --node-id (its clock agreeing with the stores', so
// its clock check passes) retrying its registration every 100 ms, so it
// takes the worker ID over and serves the moment the lease expires. The
// holder must have fenced itself a tenth of the margin before that:
// otherwise two lifetimes serve one worker ID at once
// (checker.WorkerExclusive) and its timestamps go back
// (checker.WorkerTimeline).
//
// Inside only: nothing in the design detects a store clock that steps
// further ahead than the margin (docs/design.md, snowflake IDs, assumes the store leaders'
// clocks agree within it), so a step outside it is not a fault the
// guarantees cover. It needs namespaces; without them it skips.
func fenceSkewTakeover(ctx context.Context, e *Env, r *rand.Rand) error {
	const name = "fence-skew-takeover"
	if e.Net == nil {
		e.Log.Skip(name, "needs network namespaces (the holder must serve while cut off)")
		return nil
	}
	e.twinMu.Lock()
	defer e.twinMu.Unlock()
	a := randomAlloc(e, r)
	if a == nil || !a.Running() {
		return nil
	}
	margin := cmp.Or(e.SnowflakeFenceMargin, time.Second)
	step := Aim(margin, Inside)
	stores := names(e.C.Stores)
	if err := e.Net.Cut([]string{a.Name}, stores); err != nil {
		_ = e.Net.Uncut([]string{a.Name}, stores)
		return err
	}
	cut := time.Now()
	stopOld := e.probeSnowflake(ctx, a)
	defer stopOld()
	heal := func() {
		for _, s := range e.C.Stores {
			if s.Running() {
				_ = e.SetClock(context.Background(), s, 0)
			}
		}
		_ = e.Net.Uncut([]string{a.Name}, stores)
	}
	for _, s := range e.C.Stores {
		if !s.Running() {
			continue
		}
		if err := e.SetClock(ctx, s, step); err != nil {
			e.Log.Error(name, s.Name, err)
			heal()
			return nil
		}
	}
	e.Log.Inject(name, a.Name, "cut from all stores, their clocks stepped %v ahead: its lease expires %v early, its fence (TTL %v - margin %v after its last renewal) must come first",
		step, step, e.LeaseTTL, margin)
	e.Log.Margin(name, a.Name, MarginSnowflakeFence, Inside, step, margin)
	// The lease now expires about TTL - step after the last renewal,
	// which was at most one renewal interval before the cut. Start the
	// twin a second before that: it answers unavailable until it holds
	// the worker ID, and its registration retries every 100 ms.
	sleep(ctx, e.LeaseTTL-step-time.Second-time.Since(cut))
	twin, err := e.startTwin(ctx, a, step, "--snowflake-renew-interval", twinRenew)
	if err != nil {
		heal()
		return err
	}
	if twin != nil {
		e.Log.Inject(name, twin.Name, "twin with clock %v ready %s after the cut; takes --node-id %s's worker ID over once the lease expires",
			step, time.Since(cut).Round(time.Millisecond), a.NodeID)
		stopTwin := e.probeSnowflake(ctx, twin)
		hold(ctx, r, 2*time.Second, 3*time.Second)
		stopTwin()
		stopOld()
		e.stopTwin(twin)
	}
	heal()
	// The twin's last lease was stamped by the stepped clocks: it runs
	// step longer now that they are back.
	sleep(ctx, step)
	return e.restartOriginal(ctx, name, a, "twin killed, store clocks back to true time, original restarted")
}
