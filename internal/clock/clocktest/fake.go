// Package clocktest is a manual clock for unit tests.
package clocktest

import (
	"sync"
	"time"
)

// Fake is a clock that moves only when told: Advance and Sleep move it
// forward, Set moves it anywhere (a wall-clock step). It implements
// clock.Clock and clock.Sleeper and is safe for concurrent use.
type Fake struct {
	mu    sync.Mutex
	t     time.Time
	slept time.Duration
}

// New returns a Fake reading t.
func New(t time.Time) *Fake { return &Fake{t: t} }

// Now is the fake time.
func (c *Fake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Fake) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// Set steps the clock to t, forwards or backwards.
func (c *Fake) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// Sleep advances the clock by d and records it, so code that waits for
// time to pass finishes at once.
func (c *Fake) Sleep(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	c.slept += d
}

// Slept is the total of every Sleep.
func (c *Fake) Slept() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.slept
}
