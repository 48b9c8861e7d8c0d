package client_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/client"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// load runs workers goroutines calling f until stop closes; each records
// the IDs it got in order, and every error.
type load struct {
	mu   sync.Mutex
	ids  [][]int64
	errs []error
	wg   sync.WaitGroup
	ops  atomic.Int64
}

func runLoad(workers int, stop <-chan struct{}, f func(ctx context.Context) ([]int64, error)) *load {
	l := &load{ids: make([][]int64, workers)}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
				ids, err := f(ctx)
				cancel()
				l.mu.Lock()
				if err != nil {
					l.errs = append(l.errs, err)
				}
				l.ids[w] = append(l.ids[w], ids...)
				l.mu.Unlock()
				l.ops.Add(1)
			}
		}()
	}
	return l
}

// check fails t on any error, any duplicate ID, and (increasing) any
// goroutine whose IDs did not strictly increase; it returns the ID count.
func (l *load) check(t *testing.T, increasing bool) int {
	t.Helper()
	l.wg.Wait()
	for i, err := range l.errs {
		if i < 5 {
			t.Errorf("a call failed: %v", err)
		}
	}
	if len(l.errs) > 0 {
		t.Errorf("%d calls failed", len(l.errs))
	}
	seen := map[int64]bool{}
	for w, ids := range l.ids {
		for i, id := range ids {
			if seen[id] {
				t.Fatalf("ID %d handed out twice", id)
			}
			seen[id] = true
			if increasing && i > 0 && id <= ids[i-1] {
				t.Fatalf("goroutine %d: ID %d after %d", w, id, ids[i-1])
			}
		}
	}
	return len(seen)
}

// waitOps waits until the load made n more calls (progress, not time).
func (l *load) waitOps(t *testing.T, n int64) {
	t.Helper()
	want := l.ops.Load() + n
	poll.UntilOK(t, 30*time.Second, "the load", func() error {
		if n := l.ops.Load(); n < want {
			return fmt.Errorf("stalled at %d calls, want %d", n, want)
		}
		return nil
	})
}

// An allocsvr SIGKILLed under load: while the other is up no caller sees
// an error, no ID is handed out twice, and a buffered client's IDs keep
// increasing per goroutine across the failover.
func TestFailoverAllocKill(t *testing.T) {
	c := sharedCluster(t)
	createTag(t, c, "failover", 200)
	var logs logBuffer
	plain := newClient(t, client.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	buffered := newClient(t, client.WithLocalBuffer(50))
	stop := make(chan struct{})
	direct := runLoad(4, stop, func(ctx context.Context) ([]int64, error) { return plain.NextIDs(ctx, "failover", 5) })
	viaBuf := runLoad(4, stop, func(ctx context.Context) ([]int64, error) {
		id, err := buffered.NextID(ctx, "failover")
		if err != nil {
			return nil, err
		}
		return []int64{id}, nil
	})
	direct.waitOps(t, 200)
	victim := c.Allocs[1]
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	direct.waitOps(t, 500)
	viaBuf.waitOps(t, 2000)
	close(stop)
	n := direct.check(t, false)
	n += viaBuf.check(t, true)
	if !strings.Contains(logs.String(), "endpoint ejected") {
		t.Errorf("no call ever failed over: the test did not test failover\n%s", logs.String())
	}
	t.Logf("%d IDs, %d+%d calls, one allocsvr killed", n, direct.ops.Load(), viaBuf.ops.Load())
	restart(t, c, victim)
}

// The store leader SIGKILLed behind the allocsvrs: with small segments
// the allocsvrs run dry and answer unavailable until a new leader is
// elected; the client retries within the callers' deadlines, so no error
// and no duplicate reaches them.
func TestStoreLeaderKill(t *testing.T) {
	c := sharedCluster(t)
	createTag(t, c, "leaderkill", 20)
	cl := newClient(t)
	stop := make(chan struct{})
	l := runLoad(4, stop, func(ctx context.Context) ([]int64, error) { return cl.NextIDs(ctx, "leaderkill", 10) })
	l.waitOps(t, 100)
	leader := launchtest.Leader(t, c)
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	newLeader := waitNewLeader(t, c, leader)
	l.waitOps(t, 300) // served through segments reserved from the new leader
	close(stop)
	n := l.check(t, false)
	t.Logf("%d IDs, %d calls; leader %s killed, %s took over", n, l.ops.Load(), leader.Name, newLeader.Name)
	restart(t, c, leader)
}

func waitNewLeader(t *testing.T, c *launch.Cluster, old *launch.Proc) *launch.Proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		p, err := c.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if p != old {
			return p
		}
	}
}

// logBuffer is a bytes.Buffer safe for the client's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
