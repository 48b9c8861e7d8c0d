package poll

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps what Fatalf said and ends its
// goroutine, as testing.T does.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder on its own goroutine and returns what it
// failed with ("" when it returned).
func run(f func(tb testing.TB)) string {
	r := &recorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.msg
}

func TestUntilReturnsOnceTrue(t *testing.T) {
	var n atomic.Int32
	msg := run(func(tb testing.TB) {
		Until(tb, 5*time.Second, "three calls", func() bool { return n.Add(1) == 3 })
	})
	if msg != "" || n.Load() != 3 {
		t.Fatalf("failed %q after %d calls, want no failure after 3", msg, n.Load())
	}
}

func TestUntilFailsAfterTimeout(t *testing.T) {
	var n atomic.Int32
	start := time.Now()
	msg := run(func(tb testing.TB) {
		Until(tb, 50*time.Millisecond, "never", func() bool { n.Add(1); return false })
	})
	if !strings.Contains(msg, "waiting for never") || time.Since(start) < 50*time.Millisecond {
		t.Fatalf("failed %q after %v", msg, time.Since(start))
	}
	// Pauses of 1, 2, 4, 8, 16, 32 ms: a handful of calls, not thousands.
	if c := n.Load(); c < 3 || c > 50 {
		t.Fatalf("%d calls in 50 ms", c)
	}
}

func TestUntilOKReportsLastError(t *testing.T) {
	var n atomic.Int32
	msg := run(func(tb testing.TB) {
		UntilOK(tb, 30*time.Millisecond, "a file", func() error { return fmt.Errorf("attempt %d", n.Add(1)) })
	})
	if want := fmt.Sprintf("attempt %d", n.Load()); !strings.Contains(msg, "waiting for a file: "+want) {
		t.Fatalf("failed %q, want the last error %q", msg, want)
	}
	if msg := run(func(tb testing.TB) { UntilOK(tb, time.Second, "nil", func() error { return nil }) }); msg != "" {
		t.Fatalf("failed %q on nil", msg)
	}
}

func TestUntilCtxEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(20*time.Millisecond, func() { cancel(errors.New("test over")) })
	msg := run(func(tb testing.TB) { UntilCtx(ctx, tb, "the leader", func() bool { return false }) })
	if !strings.Contains(msg, "waiting for the leader (test over)") {
		t.Fatalf("failed %q", msg)
	}
	var n atomic.Int32
	if msg := run(func(tb testing.TB) {
		UntilCtx(context.Background(), tb, "two calls", func() bool { return n.Add(1) == 2 })
	}); msg != "" {
		t.Fatalf("failed %q", msg)
	}
}

// Timed returns the time to f's first nil, and its checks stay close
// together once UntilOK's would be maxPause apart (a timer is never
// early, so a gap below maxPause shows the cap; only a late one could
// blur it, hence the median).
func TestTimedReturnsTheWait(t *testing.T) {
	var calls []time.Duration
	var took time.Duration
	start := time.Now()
	msg := run(func(tb testing.TB) {
		took = Timed(tb, 5*time.Second, "400 ms", func() error {
			calls = append(calls, time.Since(start))
			if calls[len(calls)-1] < 400*time.Millisecond {
				return errors.New("not yet")
			}
			return nil
		})
	})
	// Timed's clock starts a moment after start: allow it that moment.
	if msg != "" || took < calls[len(calls)-1]-time.Millisecond {
		t.Fatalf("failed %q, took %v; want at least until the last call at %v", msg, took, calls[len(calls)-1])
	}
	var gaps []time.Duration
	for i := 1; i < len(calls); i++ {
		if calls[i-1] > 150*time.Millisecond {
			gaps = append(gaps, calls[i]-calls[i-1])
		}
	}
	slices.Sort(gaps)
	if len(gaps) == 0 || gaps[len(gaps)/2] >= maxPause {
		t.Fatalf("checks after 150 ms came %v apart, want a median under %v", gaps, maxPause)
	}
	msg = run(func(tb testing.TB) {
		Timed(tb, 20*time.Millisecond, "never", func() error { return errors.New("still down") })
	})
	if !strings.Contains(msg, "waiting for never: still down") {
		t.Fatalf("failed %q", msg)
	}
}
