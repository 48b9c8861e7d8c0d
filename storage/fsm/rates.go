package fsm

import (
	"math"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// RateWindowMs is the window over which a counter's advance rate is
// measured. A rate is the advance since the window began over
// max(elapsed, RateWindowMs), so one reservation right after a window
// began cannot look like a burst. A constant of the binary: every member
// measures with the same one.
const RateWindowMs = 60_000

// observeRate records, in Apply, that a counter (a tag's max_id, a
// section's max_seq) moved from before to after at now (the command's
// now_ms), and returns the updated state (r itself, or a new one when r is
// nil). The peak only grows: a restore jumps by the highest rate ever
// measured, the safe side. A clock that went back (another leader) starts
// a new window. A few integer operations: it runs on every reservation.
func observeRate(r *seqsvrv1.RateState, now, before, after int64) *seqsvrv1.RateState {
	if r == nil {
		r = &seqsvrv1.RateState{WindowStartMs: now, WindowStartValue: before}
	}
	elapsed := now - r.GetWindowStartMs()
	if elapsed >= RateWindowMs || elapsed < 0 || r.GetWindowStartValue() > before {
		r.WindowStartMs, r.WindowStartValue, elapsed = now, before, 0
	}
	r.PeakPerSec = max(r.GetPeakPerSec(), PerSecond(after-r.GetWindowStartValue(), max(elapsed, RateWindowMs)))
	return r
}

// PerSecond is delta per ms milliseconds as a rate per second, rounded up
// (a slow counter still counts), saturating instead of overflowing.
func PerSecond(delta, ms int64) int64 {
	if delta <= 0 || ms <= 0 {
		return 0
	}
	if delta > math.MaxInt64/1000 {
		return delta/ms*1000 + 1000
	}
	return (delta*1000 + ms - 1) / ms
}

func cloneRate(r *seqsvrv1.RateState) *seqsvrv1.RateState {
	if r == nil {
		return nil
	}
	return &seqsvrv1.RateState{WindowStartMs: r.GetWindowStartMs(), WindowStartValue: r.GetWindowStartValue(), PeakPerSec: r.GetPeakPerSec()}
}
