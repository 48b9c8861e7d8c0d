package seq

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
)

// A space created after this Node's last heartbeat is served once the
// next heartbeat (sent after the call began) is answered, not refused as
// not_found; a space the store does not have is not_found after that
// heartbeat, or after two intervals without one.
func TestSpaceCreatedSinceLastHeartbeat(t *testing.T) {
	st, c, n := oneNode(t)
	c.Advance(time.Millisecond) // calls from now on begin after the last heartbeat's send
	st.createSpace("late", 20, 10, 10)
	type answer struct {
		vals []int64
		err  error
	}
	call := func(space string) chan answer {
		ch := make(chan answer, 1)
		go func() {
			v, _, err := n.Next(context.Background(), space, []uint64{3}, false)
			ch <- answer{v, err}
		}()
		return ch
	}
	late, nope := call("late"), call("nope")
	select {
	case a := <-late:
		t.Fatalf("answered before a heartbeat brought the space: %v, %v", a.vals, a.err)
	case a := <-nope:
		t.Fatalf("an unknown space answered before the next heartbeat: %v, %v", a.vals, a.err)
	case <-time.After(100 * time.Millisecond):
	}
	mustBeat(t, n)
	if a := <-late; a.err != nil || len(a.vals) != 1 || a.vals[0] != 1 {
		t.Fatalf("the new space after the heartbeat: %v, %v; want [1]", a.vals, a.err)
	}
	wantCode(t, (<-nope).err, connect.CodeNotFound)

	// No heartbeat at all (the store away): not_found after two intervals.
	c.Advance(time.Millisecond)
	start := time.Now()
	_, _, err := n.Next(context.Background(), "nope", []uint64{3}, false)
	wantCode(t, err, connect.CodeNotFound)
	if d := time.Since(start); d < 2*n.cfg.HeartbeatInterval-50*time.Millisecond {
		t.Fatalf("not_found after %v without a heartbeat, want about %v", d, 2*n.cfg.HeartbeatInterval)
	}
	// A call's own deadline ends the wait sooner.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, _, err = n.Next(ctx, "nope", []uint64{3}, false)
	wantCode(t, err, connect.CodeNotFound)
}
