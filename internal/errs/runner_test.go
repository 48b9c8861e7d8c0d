package errs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"
)

// fakeSleep records the pauses Retry asks for and returns at once;
// cancel, when set, is called at the given pause to end the caller's
// context as a real wait would.
type fakeSleep struct {
	pauses []time.Duration
	cancel context.CancelFunc
	at     int
}

func (f *fakeSleep) sleep(ctx context.Context, d time.Duration) error {
	f.pauses = append(f.pauses, d)
	if f.cancel != nil && len(f.pauses) == f.at {
		f.cancel()
	}
	return ctx.Err()
}

func unavailable(n int) error {
	return connect.NewError(connect.CodeUnavailable, fmt.Errorf("no leader (%d)", n))
}

func TestBackoffPauseBounds(t *testing.T) {
	b := Backoff{Min: 10 * time.Millisecond, Max: 80 * time.Millisecond}
	want := []time.Duration{10, 20, 40, 80, 80, 80} // ms, before jitter
	for i := 0; i < 200; i++ {
		for n, d := range want {
			d *= time.Millisecond
			if got := b.Pause(n + 1); got < d/2 || got > d {
				t.Fatalf("Pause(%d) = %v, want within [%v, %v]", n+1, got, d/2, d)
			}
		}
	}
	// Far past the doubling's overflow, still Max.
	if got := b.Pause(1 << 20); got < b.Max/2 || got > b.Max {
		t.Fatalf("Pause(huge) = %v, want within [%v, %v]", got, b.Max/2, b.Max)
	}
	if got := (Backoff{}).Pause(3); got != 0 {
		t.Fatalf("zero Backoff paused %v", got)
	}
	// A Max below Min means Min.
	if got := (Backoff{Min: time.Second}).Pause(2); got < time.Second/2 || got > time.Second {
		t.Fatalf("Max below Min: Pause = %v", got)
	}
}

func TestRetryBacksOffUntilSuccess(t *testing.T) {
	fs := &fakeSleep{}
	p := Policy{Caller: StoreCall, Backoff: Backoff{Min: 4 * time.Millisecond, Max: 16 * time.Millisecond}, sleep: fs.sleep}
	var seen []int
	err := Retry(context.Background(), p, func(_ context.Context, attempt int) error {
		seen = append(seen, attempt)
		if attempt < 5 {
			return unavailable(attempt)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(seen) != "[1 2 3 4 5]" {
		t.Fatalf("attempts %v", seen)
	}
	ceil := []time.Duration{4, 8, 16, 16}
	if len(fs.pauses) != len(ceil) {
		t.Fatalf("pauses %v, want %d", fs.pauses, len(ceil))
	}
	for i, d := range fs.pauses {
		c := ceil[i] * time.Millisecond
		if d < c/2 || d > c {
			t.Errorf("pause %d = %v, want within [%v, %v]", i+1, d, c/2, c)
		}
	}
}

func TestRetryFirstPauseMax(t *testing.T) {
	fs := &fakeSleep{}
	p := Policy{Caller: StoreCall, Backoff: Backoff{Min: time.Hour, Max: time.Hour}, FirstPauseMax: time.Millisecond, Attempts: 3, sleep: fs.sleep}
	_ = Retry(context.Background(), p, func(_ context.Context, n int) error { return unavailable(n) })
	if len(fs.pauses) != 2 || fs.pauses[0] > time.Millisecond || fs.pauses[1] < 30*time.Minute {
		t.Fatalf("pauses %v: want the first at most 1ms, the second from the backoff", fs.pauses)
	}
}

func TestRetryStopsAtOnceOnDefinite(t *testing.T) {
	fs := &fakeSleep{}
	var failures []Verdict
	p := Policy{Caller: StoreCall, Backoff: Backoff{Min: time.Millisecond, Max: time.Millisecond}, sleep: fs.sleep,
		OnFailure: func(_ int, _ error, v Verdict) { failures = append(failures, v) }}
	answer := FromConnect("GetTag", connect.NewWireError(connect.CodeNotFound, errors.New("tag t")))
	calls := 0
	err := Retry(context.Background(), p, func(context.Context, int) error { calls++; return answer })
	if calls != 1 || len(fs.pauses) != 0 {
		t.Fatalf("%d calls, pauses %v: a definite answer was retried", calls, fs.pauses)
	}
	if !errors.Is(err, NotFound) || Code(err) != connect.CodeNotFound || connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("err %v lost the code", err)
	}
	if err.Error() != answer.Error() {
		t.Fatalf("err text %q, want the answer's %q", err, answer)
	}
	var st *Stopped
	if !errors.As(err, &st) || st.Attempts != 1 || st.Ctx != nil || st.OutOfAttempts || !st.Verdict.Definite {
		t.Fatalf("Stopped = %+v", st)
	}
	if len(failures) != 1 || !failures[0].Definite {
		t.Fatalf("OnFailure saw %+v", failures)
	}
	// The store's internal is not retried by a store caller; an
	// allocsvr's is, by a client.
	internal := connect.NewWireError(connect.CodeInternal, errors.New("boom"))
	calls = 0
	_ = Retry(context.Background(), p, func(context.Context, int) error { calls++; return internal })
	if calls != 1 {
		t.Fatalf("store internal: %d calls", calls)
	}
	p.Caller, p.Attempts, calls = AllocCall, 3, 0
	_ = Retry(context.Background(), p, func(context.Context, int) error { calls++; return internal })
	if calls != 3 {
		t.Fatalf("alloc internal: %d calls, want 3", calls)
	}
}

func TestRetryAttemptsLimit(t *testing.T) {
	fs := &fakeSleep{}
	p := Policy{Caller: AllocCall, Backoff: Backoff{Min: time.Millisecond, Max: time.Millisecond}, Attempts: 3, sleep: fs.sleep}
	calls := 0
	err := Retry(context.Background(), p, func(_ context.Context, n int) error { calls++; return unavailable(n) })
	if calls != 3 || len(fs.pauses) != 2 {
		t.Fatalf("%d calls, %d pauses, want 3 and 2", calls, len(fs.pauses))
	}
	var st *Stopped
	if !errors.As(err, &st) || !st.OutOfAttempts || st.Attempts != 3 || connect.CodeOf(err) != connect.CodeUnavailable {
		t.Fatalf("err %v (%+v)", err, st)
	}
	if got := st.Last.Error(); got != unavailable(3).Error() {
		t.Fatalf("Last = %q, want the third attempt's", got)
	}
}

func TestRetryHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fs := &fakeSleep{cancel: cancel, at: 2}
	p := Policy{Caller: StoreCall, Backoff: Backoff{Min: time.Millisecond, Max: time.Millisecond}, sleep: fs.sleep}
	calls := 0
	err := Retry(ctx, p, func(_ context.Context, n int) error { calls++; return unavailable(n) })
	if calls != 2 {
		t.Fatalf("%d calls after the context ended in the second pause, want 2", calls)
	}
	var st *Stopped
	if !errors.As(err, &st) || !errors.Is(st.Ctx, context.Canceled) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v does not say the context ended", err)
	}
	if Code(err) != connect.CodeUnavailable {
		t.Fatalf("Code = %v, want the last attempt's unavailable", Code(err))
	}

	// A context ended during an attempt stops at once, even on an answer
	// Judge would retry.
	ctx2, cancel2 := context.WithCancel(context.Background())
	calls = 0
	err = Retry(ctx2, p, func(_ context.Context, n int) error { calls++; cancel2(); return unavailable(n) })
	if calls != 1 || !errors.Is(err, context.Canceled) {
		t.Fatalf("%d calls, err %v", calls, err)
	}

	// The real wait wakes when the context ends.
	ctx3, cancel3 := context.WithCancel(context.Background())
	p = Policy{Caller: StoreCall, Backoff: Backoff{Min: time.Hour, Max: time.Hour}}
	err = Retry(ctx3, p, func(_ context.Context, n int) error { go cancel3(); return unavailable(n) })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}
