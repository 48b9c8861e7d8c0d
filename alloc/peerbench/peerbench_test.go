package peerbench

import (
	"context"
	"testing"
	"time"

	"github.com/bwmarrin/snowflake"
	"github.com/sony/sonyflake/v2"

	seqsnowflake "github.com/seqsvr/seqsvr/alloc/snowflake"
	"github.com/seqsvr/seqsvr/internal/clock"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// report adds ids/ms and the ratio to the layout's limit (IDs per ms).
func report(b *testing.B, limitPerMs float64) {
	ms := float64(b.Elapsed().Nanoseconds()) / 1e6
	if ms <= 0 {
		return
	}
	b.ReportMetric(float64(b.N)/ms, "ids/ms")
	b.ReportMetric(float64(b.N)/ms/limitPerMs, "of-limit")
}

// A peer is one generator: start builds it and returns its one-ID call.
type peer struct {
	name       string
	limitPerMs float64 // IDs per ms its layout allows
	start      func() (next func() error, err error)
}

func sonyflakePeer(st sonyflake.Settings) func() (func() error, error) {
	return func() (func() error, error) {
		st.MachineID = func() (int, error) { return 1, nil }
		sf, err := sonyflake.New(st)
		if err != nil {
			return nil, err
		}
		return func() error { _, err := sf.NextID(); return err }, nil
	}
}

var peers = []peer{
	{"seqsvr", 4096, func() (func() error, error) {
		g, err := seqsnowflake.NewGenerator(spec.DefaultLayout(), 1, 0, clock.System())
		if err != nil {
			return nil, err
		}
		ctx := context.Background()
		return func() error { _, err := g.NextID(ctx); return err }, nil
	}},
	{"bwmarrin", 4096, func() (func() error, error) {
		n, err := snowflake.NewNode(1) // package defaults: 41/10/12, 1 ms
		if err != nil {
			return nil, err
		}
		return func() error { n.Generate(); return nil }, nil
	}},
	{"sonyflake-1ms-12bit", 4096, sonyflakePeer(sonyflake.Settings{BitsSequence: 12, BitsMachineID: 10, TimeUnit: time.Millisecond})},
	{"sonyflake-default", 25.6, sonyflakePeer(sonyflake.Settings{})},
}

// BenchmarkPeers runs one ID per call on one goroutine for each generator,
// all with 41/10/12 bits and 1 ms ticks (4096 IDs/ms) except
// sonyflake-default (8 sequence bits per 10 ms: 25.6 IDs/ms). Every peer is
// called through the same closure, so the call costs them all alike.
func BenchmarkPeers(b *testing.B) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			next, err := p.start()
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := next(); err != nil {
					b.Fatal(err)
				}
			}
			report(b, p.limitPerMs)
		})
	}
}
