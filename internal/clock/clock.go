// Package clock is the one way seqsvr reads wall-clock time, so tests and
// the fault harness can skew and step it. Store commands carry the time
// read here (the FSM never reads a clock), and the snowflake generator and
// its lease checks read it through a Clock.
package clock

import (
	"time"

	"github.com/seqsvr/seqsvr/internal/faults"
)

// Clock reads wall-clock time. Implementations must be safe for concurrent
// use. A Time read through it may carry a monotonic reading; durations
// measured with Sub use it when present, so a stepped wall clock neither
// stretches nor shrinks a lease.
type Clock interface {
	Now() time.Time
}

// Sleeper is implemented by clocks that control the passage of time
// themselves (fake clocks in tests): code that must wait for the clock to
// pass a point waits through it instead of sleeping on the real clock.
type Sleeper interface {
	Sleep(d time.Duration)
}

type system struct{}

// Now is faults.Now: time.Now plus the harness's injected skew in
// -tags faults builds, plain time.Now otherwise. Adding a skew keeps the
// monotonic reading, so a skew moves timestamps but not measured durations.
func (system) Now() time.Time { return faults.Now() }

// System is the process clock, skewable by the fault harness.
func System() Clock { return system{} }

// Or returns c, or System() when c is nil: the one defaulting rule for
// every Config that takes a Clock.
func Or(c Clock) Clock {
	if c == nil {
		return System()
	}
	return c
}
