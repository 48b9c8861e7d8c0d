package errs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"
)

// Backoff is the pause between attempts after failures in a row: Min
// after the first, doubling up to Max. Each pause is drawn from the upper
// half of that value (jitter), so callers that failed together do not all
// come back at the same instant. It is the one backoff schedule of seqsvr:
// Retry uses it, and so do the loops that retry whole operations on their
// own schedule (the segment loader, the snowflake worker's registration).
type Backoff struct {
	Min, Max time.Duration
}

// Pause is the pause after the n-th failure in a row (n >= 1): a value in
// [d/2, d] where d is Min doubled n-1 times, at most Max. Zero when Min is
// zero or less.
func (b Backoff) Pause(n int) time.Duration {
	if b.Min <= 0 {
		return 0
	}
	d := b.Min << min(max(n-1, 0), 32)
	if d > b.Max || d <= 0 { // d <= 0: the shift overflowed
		d = max(b.Max, b.Min)
	}
	return d/2 + rand.N(d/2+1)
}

// Policy says how Retry repeats a call. The backoff values come from the
// caller's own configuration (its DefaultConfig or options), never from
// literals at the call site.
type Policy struct {
	// Caller is who makes the call: it picks Judge's rule.
	Caller Caller
	// Backoff spaces the attempts.
	Backoff
	// FirstPauseMax, when above zero, bounds the pause before the first
	// retry: a caller whose first failure is most often one member going
	// away (the store client) tries the next at once, and only a second
	// failure earns the backoff.
	FirstPauseMax time.Duration
	// Attempts bounds the attempts (0: until Judge says stop or ctx ends).
	Attempts int
	// OnFailure, when set, is told of every failed attempt with Judge's
	// verdict, before Retry looks at the caller's context (so a member
	// that did not answer in time is dropped even when the caller then
	// gives up). For logs, ejecting an endpoint, forgetting a leader.
	OnFailure func(attempt int, err error, v Verdict)

	// sleep replaces the real wait in this package's tests.
	sleep func(ctx context.Context, d time.Duration) error
}

// Retry calls fn (attempt counts from 1) until it succeeds, Judge says a
// failure is not worth another attempt, the attempts run out, or ctx
// ends; between attempts it pauses as p.Backoff says (jittered, doubling),
// waking early when ctx ends. Every attempt is the same call: an
// idempotency key fn sends must be chosen once, outside fn, so that a
// failure that is not definite (it may have taken effect) is retried with
// the same key.
//
// On failure the error is a *Stopped holding the last attempt's error:
// errors.Is, errors.As, Code and connect.CodeOf see that error's code,
// and, when ctx ended the retries, ctx's error too.
func Retry(ctx context.Context, p Policy, fn func(ctx context.Context, attempt int) error) error {
	sleep := p.sleep
	if sleep == nil {
		sleep = Sleep
	}
	for attempt := 1; ; attempt++ {
		err := fn(ctx, attempt)
		if err == nil {
			return nil
		}
		v := Judge(p.Caller, err)
		if p.OnFailure != nil {
			p.OnFailure(attempt, err, v)
		}
		stop := &Stopped{Last: err, Attempts: attempt, Verdict: v}
		if ctx.Err() != nil {
			// The caller gave up: whatever Judge says, no more attempts.
			stop.Ctx = ctx.Err()
			return stop
		}
		if !v.Retry {
			return stop
		}
		if p.Attempts > 0 && attempt >= p.Attempts {
			stop.OutOfAttempts = true
			return stop
		}
		d := p.Pause(attempt)
		if attempt == 1 && p.FirstPauseMax > 0 {
			d = min(d, p.FirstPauseMax)
		}
		if sleep(ctx, d) != nil {
			stop.Ctx = ctx.Err()
			return stop
		}
	}
}

// Sleep waits d, or less when ctx ends first (its error then): the pause
// between two attempts, and between two polls of a process (launch.Sleep).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Stopped is Retry's error: the last attempt's error and why no other
// attempt followed.
type Stopped struct {
	// Last is the last attempt's error.
	Last error
	// Attempts made.
	Attempts int
	// Verdict is Judge's on Last.
	Verdict Verdict
	// Ctx is the caller's context error when that ended the retries.
	Ctx error
	// OutOfAttempts: Policy.Attempts were all made.
	OutOfAttempts bool
}

// Error is the last attempt's text when Judge stopped the retries (the
// answer is the answer); otherwise it says what ended them.
func (e *Stopped) Error() string {
	switch {
	case e.Ctx != nil:
		return fmt.Sprintf("%v (after %d attempts: %v)", e.Last, e.Attempts, e.Ctx)
	case e.OutOfAttempts:
		return fmt.Sprintf("%v (after %d attempts)", e.Last, e.Attempts)
	}
	return e.Last.Error()
}

// Unwrap is the last attempt's error, then the context's: the last
// attempt's code (Code takes the outermost) wins over the context's.
func (e *Stopped) Unwrap() []error {
	if e.Ctx == nil {
		return []error{e.Last}
	}
	return []error{e.Last, e.Ctx}
}
