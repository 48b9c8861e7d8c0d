package seq

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/clock"
)

// liveNode is a started Node served over HTTP, on the real clock.
type liveNode struct {
	n         *Node
	srv       *httptest.Server
	partition context.CancelFunc // stops heartbeats; the node keeps answering
}

func startLive(t *testing.T, st Store, id string) *liveNode {
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	n, err := New(st, Config{NodeID: id, URL: srv.URL, Clock: clock.System(),
		HeartbeatInterval: 5 * time.Millisecond, FenceMargin: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	serveNode(t, mux, n)
	ctx, cancel := context.WithCancel(context.Background())
	n.Start(ctx)
	return &liveNode{n: n, srv: srv, partition: cancel}
}

// TestOrderThroughHandovers runs one sequential client per key through
// random nodes while nodes join, leave gracefully, and lose the store
// (heartbeats stop, calls still reach them): every key's values must grow.
func TestOrderThroughHandovers(t *testing.T) {
	st := newFakeStore(clock.System())
	st.ttl = 300 * time.Millisecond
	st.createSpace("s", 64, 8, 5) // 8 sections, small steps: many raises
	var mu sync.Mutex
	nodes := []*liveNode{startLive(t, st, "a"), startLive(t, st, "b")}
	pick := func() *Node {
		mu.Lock()
		defer mu.Unlock()
		return nodes[rand.N(len(nodes))].n
	}
	run := 400 * time.Millisecond
	if testing.Short() {
		run = 150 * time.Millisecond
	}
	stop := make(chan struct{})
	var served atomic.Int64
	var wg sync.WaitGroup
	for key := range uint64(64) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last int64
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				got, _, err := pick().Next(ctx, "s", []uint64{key, key}, false)
				cancel()
				if err != nil {
					continue
				}
				if got[0] <= last || got[1] <= got[0] {
					t.Errorf("key %d: %v after %d", key, got, last)
					return
				}
				last = got[1]
				served.Add(1)
			}
		}()
	}
	names := []string{"c", "d", "e"}
	for i := 0; i < len(names); i++ {
		time.Sleep(run / 4)
		mu.Lock()
		old := nodes[0]
		nodes = append(nodes[1:], startLive(t, st, names[i]))
		if i == 1 {
			nodes = append(nodes, old) // cut off from the store, still called
		}
		mu.Unlock()
		if i == 1 {
			old.partition()
			continue
		}
		old.n.Close()
	}
	time.Sleep(2 * st.ttl) // the cut-off node's sections move meanwhile
	close(stop)
	wg.Wait()
	for _, l := range nodes {
		l.n.Close()
	}
	if served.Load() < 64 {
		t.Fatalf("only %d calls answered", served.Load())
	}
	t.Logf("%d calls answered", served.Load())
}
