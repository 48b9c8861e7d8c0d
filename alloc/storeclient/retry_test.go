package storeclient

import (
	"testing"
	"time"
)

// The first retry after a failure does not wait out the backoff: when the
// leader steps away (a handover, a stop), the next member answers at once,
// even with a backoff far longer than the caller's deadline.
func TestClientFirstRetryIsPrompt(t *testing.T) {
	fc := newFakeCluster(t, 2)
	fc.setLeader(0)
	c, err := New(fc.urls(), Options{RequestTimeout: 10 * time.Second, BackoffInitial: time.Hour, BackoffMax: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if _, err := c.GetTag(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	fc.setLeader(1)
	if _, err := c.ReserveSegment(ctx, "t", 1, "r"); err != nil {
		t.Fatalf("after the leader moved: %v", err)
	}
	if n := fc.count(0, "ReserveSegment"); n != 1 {
		t.Fatalf("the old leader got %d attempts, want 1 (the one that failed)", n)
	}
}
