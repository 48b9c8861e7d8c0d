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

// BenchmarkPeers runs one ID per call on one goroutine for each generator,
// all with 41/10/12 bits and 1 ms ticks (4096 IDs/ms) except
// sonyflake-default (8 sequence bits per 10 ms: 25.6 IDs/ms).
func BenchmarkPeers(b *testing.B) {
	b.Run("seqsvr", func(b *testing.B) {
		g, err := seqsnowflake.NewGenerator(spec.DefaultLayout(), 1, 0, clock.System())
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.ResetTimer()
		for range b.N {
			if _, err := g.NextID(ctx); err != nil {
				b.Fatal(err)
			}
		}
		report(b, 4096)
	})
	b.Run("bwmarrin", func(b *testing.B) {
		n, err := snowflake.NewNode(1) // package defaults: 41/10/12, 1 ms
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			_ = n.Generate()
		}
		report(b, 4096)
	})
	b.Run("sonyflake-1ms-12bit", func(b *testing.B) {
		sf, err := sonyflake.New(sonyflake.Settings{
			BitsSequence: 12, BitsMachineID: 10, TimeUnit: time.Millisecond,
			MachineID: func() (int, error) { return 1, nil },
		})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if _, err := sf.NextID(); err != nil {
				b.Fatal(err)
			}
		}
		report(b, 4096)
	})
	b.Run("sonyflake-default", func(b *testing.B) {
		sf, err := sonyflake.New(sonyflake.Settings{MachineID: func() (int, error) { return 1, nil }})
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for range b.N {
			if _, err := sf.NextID(); err != nil {
				b.Fatal(err)
			}
		}
		report(b, 25.6)
	})
}
