// Package poll is how tests wait for what another goroutine or process
// brings about (a leader, a background refill, a reloaded file) instead of
// sleeping a guessed time. It is the one polling loop of the tests.
//
// Guarantees:
//   - The condition is checked at once, then after pauses that start at
//     1 ms and double up to 100 ms: a quick condition is seen within a
//     millisecond or two, and a slow one costs little CPU on a loaded
//     machine. Timed, which reports how long the wait took, caps them at
//     20 ms instead.
//   - The condition is checked once more after the deadline has passed
//     before the test fails, so a condition met during the last pause
//     never fails.
//   - A failure names what was awaited and how long, and for UntilOK the
//     last error, through tb.Fatalf (so only from the test's goroutine).
package poll

import (
	"context"
	"testing"
	"time"
)

// Pauses between checks.
const (
	firstPause = time.Millisecond
	maxPause   = 100 * time.Millisecond
	// timedPause caps Timed's pauses: what it returns is at most this
	// late, where maxPause would blur a gap of a few hundred ms.
	timedPause = 20 * time.Millisecond
)

// Until calls cond until it returns true, and fails tb if it has not
// within timeout.
func Until(tb testing.TB, timeout time.Duration, what string, cond func() bool) {
	tb.Helper()
	if err := wait(context.Background(), time.Now().Add(timeout), maxPause, ok(cond)); err != nil {
		tb.Fatalf("timed out after %v waiting for %s", timeout, what)
	}
}

// UntilOK calls f until it returns nil, and fails tb with f's last error
// if it has not within timeout.
func UntilOK(tb testing.TB, timeout time.Duration, what string, f func() error) {
	tb.Helper()
	if err := wait(context.Background(), time.Now().Add(timeout), maxPause, f); err != nil {
		tb.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
	}
}

// Timed is UntilOK for a benchmark or test that reports how long the
// wait took: it returns the time from the call to f's first nil, with
// pauses of at most timedPause.
func Timed(tb testing.TB, timeout time.Duration, what string, f func() error) time.Duration {
	tb.Helper()
	start := time.Now()
	if err := wait(context.Background(), start.Add(timeout), timedPause, f); err != nil {
		tb.Fatalf("timed out after %v waiting for %s: %v", timeout, what, err)
	}
	return time.Since(start)
}

// UntilCtx calls cond until it returns true, and fails tb if ctx ends
// first (a test-wide deadline).
func UntilCtx(ctx context.Context, tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	if err := wait(ctx, time.Time{}, maxPause, ok(cond)); err != nil {
		tb.Fatalf("timed out waiting for %s (%v)", what, context.Cause(ctx))
	}
}

var errNotYet = notYet{}

type notYet struct{}

func (notYet) Error() string { return "condition not met" }

func ok(cond func() bool) func() error {
	return func() error {
		if cond() {
			return nil
		}
		return errNotYet
	}
}

// wait calls f until it returns nil, with pauses doubling from firstPause
// up to longest, and returns f's last error once deadline (zero: none)
// has passed or ctx has ended.
func wait(ctx context.Context, deadline time.Time, longest time.Duration, f func() error) error {
	pause := firstPause
	for {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil || !deadline.IsZero() && time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		pause = min(2*pause, longest)
	}
}
