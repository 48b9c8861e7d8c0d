package drive

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// A run's counts, timeline and histogram agree with what the doer did,
// and a planted stall shows as the longest gap between successes.
func TestRunCountsTimelineAndGap(t *testing.T) {
	const stall = 300 * time.Millisecond
	var calls atomic.Int64
	mk := func() (Doer, error) {
		return func(ctx context.Context) (int, error) {
			n := calls.Add(1)
			switch {
			case n == 50:
				// The one worker stalls: nothing succeeds meanwhile.
				select {
				case <-time.After(stall):
				case <-ctx.Done():
				}
				return 0, errors.New("planted")
			case n%10 == 0:
				return 0, errors.New("planted")
			}
			time.Sleep(time.Millisecond)
			return 3, nil
		}, nil
	}
	r, err := Run(mk, Options{Workers: 1, Duration: 800 * time.Millisecond, Bucket: 100 * time.Millisecond, Hist: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Ops == 0 || r.Errors == 0 || r.IDs != 3*r.Ops {
		t.Fatalf("ops %d ids %d errors %d", r.Ops, r.IDs, r.Errors)
	}
	if r.FirstError != "planted" {
		t.Fatalf("first error %q", r.FirstError)
	}
	if len(r.Timeline) != 8 || r.BucketMs != 100 {
		t.Fatalf("timeline of %d buckets of %d ms, want 8 of 100", len(r.Timeline), r.BucketMs)
	}
	var ok, bad int64
	for _, b := range r.Timeline {
		ok += b.OK
		bad += b.Errors
	}
	if ok != r.Ops || bad != r.Errors {
		t.Fatalf("timeline sums %d ok %d errors, result %d and %d", ok, bad, r.Ops, r.Errors)
	}
	if time.Duration(r.MaxGapUs)*time.Microsecond < stall {
		t.Fatalf("max gap %d us, the planted stall was %v", r.MaxGapUs, stall)
	}
	var planted bool
	for _, g := range r.Gaps {
		if time.Duration(g.Us)*time.Microsecond >= stall {
			planted = true
		}
	}
	if !planted {
		t.Fatalf("gaps %v miss the planted stall of %v", r.Gaps, stall)
	}
	if r.Hist == nil || r.Hist.HighestTrackableValue == 0 {
		t.Fatal("no histogram in the result")
	}
}

// A mk error stops the run before it starts.
func TestRunMkError(t *testing.T) {
	_, err := Run(func() (Doer, error) { return nil, errors.New("no") }, Options{Workers: 2, Duration: time.Second})
	if err == nil {
		t.Fatal("no error")
	}
}
