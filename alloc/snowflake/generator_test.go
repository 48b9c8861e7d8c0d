package snowflake

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/clock"
	"github.com/seqsvr/seqsvr/internal/clock/clocktest"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// t0 is a fixed instant on a millisecond boundary.
var t0 = time.UnixMilli(1767225600000) // 2026-01-01T00:00:00Z

type parts struct{ ts, worker, seq int64 }

func split(id int64) parts {
	return parts{ts: id>>22 + spec.DefaultEpochMs, worker: id >> 12 & 1023, seq: id & 4095}
}

func newTestGen(t *testing.T, worker, floor int64, clk clock.Clock, opts ...Option) *Generator {
	t.Helper()
	g, err := NewGenerator(spec.DefaultLayout(), worker, floor, clk, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustID(t *testing.T, g *Generator) int64 {
	t.Helper()
	id, err := g.NextID(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestGeneratorEncodesTimestampWorkerSequence(t *testing.T) {
	clk := clocktest.New(t0)
	g := newTestGen(t, 7, 0, clk)
	ids, err := g.NextIDs(context.Background(), 3)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		want := parts{ts: t0.UnixMilli(), worker: 7, seq: int64(i)}
		if got := split(id); got != want {
			t.Fatalf("id %d = %+v, want %+v", i, got, want)
		}
	}
	clk.Advance(time.Millisecond)
	if got := split(mustID(t, g)); got.ts != t0.UnixMilli()+1 || got.seq != 0 {
		t.Fatalf("next ms: %+v, want ts+1 seq 0", got)
	}
}

func TestGeneratorSmallRollbackWaits(t *testing.T) {
	clk := clocktest.New(t0)
	g := newTestGen(t, 1, 0, clk)
	waits := 0
	g.onBackWait = func() { waits++ }
	first := mustID(t, g)
	clk.Advance(-3 * time.Millisecond)
	second := mustID(t, g)
	if second <= first {
		t.Fatalf("after a 3ms rollback: %d not above %d", second, first)
	}
	if split(second).ts < split(first).ts {
		t.Fatalf("timestamp went backwards: %+v after %+v", split(second), split(first))
	}
	if clk.Slept() < 3*time.Millisecond || waits == 0 {
		t.Fatalf("slept %v (waits %d), want the 3ms rollback waited out", clk.Slept(), waits)
	}
}

func TestGeneratorLargeRollbackUnavailable(t *testing.T) {
	clk := clocktest.New(t0)
	g := newTestGen(t, 1, 0, clk)
	first := mustID(t, g)
	clk.Advance(-10 * time.Millisecond)
	_, err := g.NextID(context.Background())
	if !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "clock moved backwards by 10ms") {
		t.Fatalf("err = %v, want unavailable with the offset", err)
	}
	if clk.Slept() != 0 {
		t.Fatalf("slept %v on a rollback beyond the tolerance", clk.Slept())
	}
	clk.Advance(10 * time.Millisecond)
	if next := mustID(t, g); next <= first {
		t.Fatalf("after the clock recovered: %d not above %d", next, first)
	}
}

func TestGeneratorMaxBackwardWaitOption(t *testing.T) {
	clk := clocktest.New(t0)
	g := newTestGen(t, 1, 0, clk, WithMaxBackwardWait(20*time.Millisecond))
	first := mustID(t, g)
	clk.Advance(-10 * time.Millisecond)
	if next := mustID(t, g); next <= first {
		t.Fatalf("%d not above %d", next, first)
	}
}

func TestGeneratorSequenceExhaustionWaitsForNextMs(t *testing.T) {
	clk := clocktest.New(t0)
	g := newTestGen(t, 3, 0, clk)
	ids, err := g.NextIDs(context.Background(), 4096)
	if err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		if p := split(id); p.ts != t0.UnixMilli() || p.seq != int64(i) {
			t.Fatalf("id %d = %+v, want all 4096 in the first ms", i, p)
		}
	}
	if clk.Slept() != 0 {
		t.Fatalf("slept %v before the sequence ran out", clk.Slept())
	}
	p := split(mustID(t, g))
	if p.ts != t0.UnixMilli()+1 || p.seq != 0 {
		t.Fatalf("4097th ID %+v, want next ms seq 0", p)
	}
	if clk.Slept() == 0 {
		t.Fatal("the 4097th ID did not wait for the next ms")
	}
}

func TestGeneratorBigBatchSpansMilliseconds(t *testing.T) {
	clk := clocktest.New(t0)
	g := newTestGen(t, 3, 0, clk)
	ids, err := g.NextIDs(context.Background(), spec.MaxCount)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("ids[%d]=%d not above ids[%d]=%d", i, ids[i], i-1, ids[i-1])
		}
	}
	if last := split(ids[len(ids)-1]); last.ts != t0.UnixMilli()+2 || last.seq != 10000-2*4096-1 {
		t.Fatalf("last of 10000 = %+v, want third ms", last)
	}
}

func TestGeneratorCountLimits(t *testing.T) {
	g := newTestGen(t, 3, 0, clocktest.New(t0))
	for _, n := range []int{0, -1, spec.MaxCount + 1} {
		if _, err := g.NextIDs(context.Background(), n); !errors.Is(err, errs.InvalidArgument) {
			t.Fatalf("count %d: err = %v, want invalid argument", n, err)
		}
	}
}

func TestGeneratorFloorRespected(t *testing.T) {
	clk := clocktest.New(t0)
	floor := t0.UnixMilli() + 3 // within the backward tolerance: waited out
	g := newTestGen(t, 1, floor, clk)
	if p := split(mustID(t, g)); p.ts <= floor {
		t.Fatalf("ts %d not above floor %d", p.ts, floor)
	}

	floor = t0.UnixMilli() + 5000 // far ahead: refused, not waited
	g = newTestGen(t, 1, floor, clk)
	_, err := g.NextID(context.Background())
	if !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "behind the worker's timestamp floor") {
		t.Fatalf("err = %v, want unavailable behind the floor", err)
	}
	clk.Advance(5 * time.Second)
	if p := split(mustID(t, g)); p.ts <= floor {
		t.Fatalf("ts %d not above floor %d", p.ts, floor)
	}
}

func TestGeneratorCeilingRefuses(t *testing.T) {
	clk := clocktest.New(t0)
	g := newTestGen(t, 1, 0, clk, WithCeiling(t0.UnixMilli()+1))
	mustID(t, g)
	clk.Advance(2 * time.Millisecond)
	if _, err := g.NextID(context.Background()); !errors.Is(err, errs.FailedPrecondition) {
		t.Fatalf("err = %v, want failed precondition beyond the lease ceiling", err)
	}
}

func TestGeneratorRejectsBadConfig(t *testing.T) {
	clk := clocktest.New(t0)
	bad := []*seqsvrv1.SnowflakeLayout{
		nil,
		{EpochMs: 0, TimestampBits: 41, WorkerBits: 10, SequenceBits: 13},
		{EpochMs: 0, TimestampBits: 0, WorkerBits: 10, SequenceBits: 12},
		{EpochMs: -1, TimestampBits: 41, WorkerBits: 10, SequenceBits: 12},
	}
	for _, l := range bad {
		if _, err := NewGenerator(l, 1, 0, clk); !errors.Is(err, errs.InvalidArgument) {
			t.Fatalf("layout %v: err = %v, want invalid argument", l, err)
		}
	}
	for _, w := range []int64{-1, 1024} {
		if _, err := NewGenerator(spec.DefaultLayout(), w, 0, clk); !errors.Is(err, errs.InvalidArgument) {
			t.Fatalf("worker %d: err = %v, want invalid argument", w, err)
		}
	}
}

func TestGeneratorContextCancelledWhileWaiting(t *testing.T) {
	clk := &stuckClock{t: t0} // never advances, cannot sleep
	g := newTestGen(t, 1, 0, clk)
	if _, err := g.NextIDs(context.Background(), 4096); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.NextID(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled while waiting for the next ms", err)
	}
}

type stuckClock struct{ t time.Time }

func (c *stuckClock) Now() time.Time { return c.t }

func TestGeneratorUniqueUnderConcurrency(t *testing.T) {
	g := newTestGen(t, 5, 0, clock.System())
	const workers, per = 8, 3000
	out := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(out[w]) < per {
				n := 1 + len(out[w])%7
				ids, err := g.NextIDs(context.Background(), n)
				if err != nil {
					t.Error(err)
					return
				}
				out[w] = append(out[w], ids...)
			}
		}()
	}
	wg.Wait()
	seen := make(map[int64]bool, workers*per)
	for w, ids := range out {
		for i, id := range ids {
			if seen[id] {
				t.Fatalf("duplicate ID %d", id)
			}
			seen[id] = true
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("goroutine %d: %d after %d", w, id, ids[i-1])
			}
		}
	}
}

// memHighWater records reservations with the data-dir cache's rule
// (TestGeneratorExtendsRealCache runs the real one).
type memHighWater struct {
	mu    sync.Mutex
	mark  int64
	calls int
	fail  error
}

func (h *memHighWater) Reserve(minMs, targetMs int64) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls++
	if h.fail != nil {
		return 0, h.fail
	}
	if h.mark < minMs {
		h.mark = max(minMs, targetMs)
	}
	return h.mark, nil
}

func (h *memHighWater) get() (int64, int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.mark, h.calls
}

func TestGeneratorPersistsHighWaterAheadOfUse(t *testing.T) {
	clk := clocktest.New(t0)
	hw := &memHighWater{}
	g := newTestGen(t, 1, 0, clk, withHighWater(hw, 0, time.Second))
	for range 50 {
		id := mustID(t, g)
		if mark, _ := hw.get(); split(id).ts > mark {
			t.Fatalf("issued ts %d above the durable mark %d", split(id).ts, mark)
		}
		clk.Advance(100 * time.Millisecond)
	}
	g.extWG.Wait()
	if _, calls := hw.get(); calls < 3 || calls > 20 {
		t.Fatalf("%d reservations for 5s of IDs with 1s ahead, want a handful", calls)
	}

	hw.mu.Lock()
	hw.fail = errors.New("disk full")
	hw.mu.Unlock()
	clk.Advance(2 * time.Second)
	if _, err := g.NextID(context.Background()); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("err = %v, want unavailable when the mark cannot be persisted", err)
	}
}

func TestGeneratorReassignKeepsIncreasing(t *testing.T) {
	clk := clocktest.New(t0)
	g := newTestGen(t, 900, 0, clk)
	first := mustID(t, g)
	if err := g.reassign(2, 0, noLimit); err != nil { // lower worker, same ms
		t.Fatal(err)
	}
	clk.Advance(time.Millisecond)
	second := mustID(t, g)
	if second <= first || split(second).worker != 2 {
		t.Fatalf("after reassign: %+v then %+v", split(first), split(second))
	}
	if err := g.reassign(1024, 0, noLimit); !errors.Is(err, errs.InvalidArgument) {
		t.Fatalf("reassign to 1024: %v", err)
	}
}

func TestDecodeRoundTripAndInvalid(t *testing.T) {
	clk := clocktest.New(t0)
	g := newTestGen(t, 42, 0, clk)
	ids, err := g.NextIDs(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	d, err := g.Decode(ids[1], time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if d.GetTimestampMs() != t0.UnixMilli() || d.GetWorkerId() != 42 || d.GetSequence() != 1 || d.GetTime() != "2026-01-01T00:00:00.000Z" {
		t.Fatalf("decode = %v", d)
	}
	for _, id := range []int64{-1, -ids[0]} {
		if _, err := g.Decode(id, time.Second); !errors.Is(err, errs.InvalidArgument) {
			t.Fatalf("decode %d: err = %v, want invalid argument", id, err)
		}
	}
	future := (t0.UnixMilli() + 5000 - spec.DefaultEpochMs) << 22
	if _, err := g.Decode(future, time.Second); !errors.Is(err, errs.InvalidArgument) {
		t.Fatalf("decode 5s ahead: err = %v, want invalid argument", err)
	}
	if _, err := g.Decode(future, 10*time.Second); err != nil {
		t.Fatalf("decode 5s ahead with 10s tolerance: %v", err)
	}
	small, err := NewGenerator(&seqsvrv1.SnowflakeLayout{EpochMs: 0, TimestampBits: 31, WorkerBits: 4, SequenceBits: 4}, 1, 0, clk)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := small.Decode(1<<40, time.Hour); !errors.Is(err, errs.InvalidArgument) {
		t.Fatalf("ID wider than the layout: err = %v", err)
	}
}
