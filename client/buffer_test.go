package client_test

import (
	"context"
	"testing"

	"github.com/seqsvr/seqsvr/client"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

// The local buffer under concurrent callers (run with -race): every ID
// unique, each goroutine's IDs strictly increasing, and about one
// NextIDRanges call per batch, whatever its size, and no NextIDs call:
// the buffer, not the network, serves them.
func TestLocalBufferConcurrent(t *testing.T) {
	c := sharedCluster(t)
	createTag(t, c, "buffered", 1000)
	createTag(t, c, "buffered-large", 100000)
	t.Run("small", func(t *testing.T) { testLocalBuffer(t, "buffered", 100, 1500) })
	t.Run("above MaxCount", func(t *testing.T) { testLocalBuffer(t, "buffered-large", 25_000, 10_000) })
}

func testLocalBuffer(t *testing.T, tag string, size, each int) {
	var calls countCalls
	const workers = 8
	cl := newClient(t, client.WithLocalBuffer(size), client.WithInterceptors(calls.interceptor()))
	got := make([][]int64, workers)
	errs := make(chan error, workers)
	done := make(chan struct{})
	for w := range workers {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range each {
				var ids []int64
				var err error
				if i%10 == 9 {
					ids, err = cl.NextIDs(context.Background(), tag, 3)
				} else {
					var id int64
					id, err = cl.NextID(context.Background(), tag)
					ids = []int64{id}
				}
				if err != nil {
					errs <- err
					return
				}
				got[w] = append(got[w], ids...)
			}
		}()
	}
	for range workers {
		<-done
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	seen := client.CheckUniqueIncreasing(t, got)
	n := calls.get(seqsvrv1connect.AllocServiceNextIDRangesProcedure)
	// Every load is one NextIDRanges call; two batches may be left over.
	if lo, hi := len(seen)/size, len(seen)/size+2; n < lo || n > hi {
		t.Fatalf("%d IDs took %d NextIDRanges calls, want %d..%d (one per batch of %d)", len(seen), n, lo, hi, size)
	}
	if old := calls.get(seqsvrv1connect.AllocServiceNextIDsProcedure); old != 0 {
		t.Fatalf("%d NextIDs calls: the allocsvr serves NextIDRanges, want none", old)
	}
	t.Logf("%d IDs by %d goroutines, %d NextIDRanges calls", len(seen), workers, n)
}
