package storage

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// The two benchmarks run on the same kind of in-process 3-member cluster
// (InmemTransport, in-memory stores), so their ratio is the cost of the
// store's own path (validation, command encoding, FSM reserve, result)
// over a bare raft apply. The real-process figures live in bench/.

func BenchmarkRawRaftApply(b *testing.B) {
	c := newTestCluster(b, 3, nil)
	leader := c.waitForLeader()
	noop, _ := proto.Marshal(&seqsvrv1.Command{Cmd: &seqsvrv1.Command_Noop{Noop: &seqsvrv1.NoopCommand{}}})
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := leader.store.raft.Apply(noop, defaultApplyTimeout).Error(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkReserveSegmentPropose(b *testing.B) {
	c := newTestCluster(b, 3, nil)
	leader := c.waitForLeader()
	ctx := context.Background()
	if _, err := leader.store.createTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "bench", Step: 1000}); err != nil {
		b.Fatal(err)
	}
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := leader.store.reserveSegment(ctx, &seqsvrv1.ReserveSegmentRequest{Tag: "bench"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkFailover measures, with the default (LAN) Raft timeouts, the
// time from stopping the leader of an in-process 3-member cluster to the
// first reservation the new leader acknowledges. Run with -benchtime=5x.
func BenchmarkFailover(b *testing.B) {
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		c := newTestCluster(b, 3, func(cfg *Config) {
			cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout, cfg.CommitTimeout = 0, 0, 0, 0
		})
		leader := c.waitForLeader()
		ctx := context.Background()
		if _, err := leader.store.createTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "f"}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		leader.stop()
		for {
			n := c.live()[0]
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			_, err := n.client().ReserveSegment(cctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "f", RequestId: "x"}))
			cancel()
			if err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		total += time.Since(start)
		b.StopTimer()
		for _, n := range c.live() {
			n.stop()
		}
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/failover")
}
