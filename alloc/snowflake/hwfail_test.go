package snowflake

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/clock/clocktest"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// A failed write of the high-water mark stops the generator at once, even
// while the clock is still below the mark made durable before (the
// background extension's failure counts too), and a later successful write
// resumes it, IDs still increasing.
func TestGeneratorStopsOnHighWaterFailure(t *testing.T) {
	clk := clocktest.New(t0)
	hw := &memHighWater{}
	g := newTestGen(t, 1, 0, clk, withHighWater(hw, 0, time.Second))
	first := mustID(t, g)
	mark, _ := hw.get()

	hw.mu.Lock()
	hw.fail = errors.New("write /data/snowflake-worker.json.tmp1: no space left on device")
	hw.mu.Unlock()
	clk.Advance(600 * time.Millisecond) // past half the margin: extends in the background
	_, _ = g.NextID(context.Background())
	g.extWG.Wait()
	if now := clk.Now().UnixMilli(); now >= mark {
		t.Fatalf("test setup: clock %d already at the durable mark %d", now, mark)
	}
	_, err := g.NextID(context.Background())
	if !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("after a failed write of the mark: %v, want unavailable with the cause", err)
	}
	if g.highWaterErr() == nil {
		t.Fatal("highWaterErr is nil while failing")
	}

	hw.mu.Lock()
	hw.fail = nil
	hw.mu.Unlock()
	clk.Advance(hwRetryInterval)
	next := mustID(t, g)
	if next <= first || g.highWaterErr() != nil {
		t.Fatalf("after space came back: %d (first %d), err %v", next, first, g.highWaterErr())
	}
	if m, _ := hw.get(); split(next).ts > m {
		t.Fatalf("issued ts %d above the durable mark %d", split(next).ts, m)
	}
}
