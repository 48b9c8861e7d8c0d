package alloc

import (
	"sync"
	"testing"
	"time"
)

// sfFakeClock is a settable clock. Sleep advances it, so the generator's
// waits are instant and observable (slept).
type sfFakeClock struct {
	mu    sync.Mutex
	t     time.Time
	slept time.Duration
}

func newSFFakeClock(t time.Time) *sfFakeClock { return &sfFakeClock{t: t} }

func (c *sfFakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *sfFakeClock) Sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.slept += d
}

func (c *sfFakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *sfFakeClock) Slept() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slept
}

func TestSystemClockFollowsTime(t *testing.T) {
	before := time.Now()
	got := SystemClock().Now()
	after := time.Now()
	if got.Before(before.Add(-time.Second)) || got.After(after.Add(time.Second)) {
		t.Fatalf("SystemClock().Now() = %v, want near %v", got, before)
	}
}
