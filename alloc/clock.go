package alloc

import (
	"time"

	"github.com/seqsvr/seqsvr/internal/faults"
)

// Clock is the only way the snowflake code reads time, so tests and the
// fault harness can skew and step it. Implementations must be safe for
// concurrent use. Time read through a Clock may carry a monotonic reading;
// the self-fence measures elapsed time with Sub, which uses it when present,
// so a stepped wall clock does not stretch or shrink the lease.
type Clock interface {
	Now() time.Time
}

// sfSleeper is implemented by clocks that control the passage of time
// themselves (fake clocks in tests). The generator waits through it instead
// of sleeping or spinning on the real clock.
type sfSleeper interface {
	Sleep(d time.Duration)
}

type systemClock struct{}

// Now is faults.Now: time.Now plus the harness's injected skew in -tags
// faults builds, plain time.Now otherwise. Adding a skew keeps the monotonic
// reading, so the skew moves timestamps but not measured durations.
func (systemClock) Now() time.Time { return faults.Now() }

// SystemClock is the process clock, skewable by the fault harness.
func SystemClock() Clock { return systemClock{} }
