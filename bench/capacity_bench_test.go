package bench

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch"
)

// BenchmarkCapacityPerMillionKeys' space: capacityKeys keys in sections of
// 100k, sampled after the first capacityMid keys were used and after all
// of them; capacityCallers goroutines call at once.
const (
	capacityMid     = 100_000
	capacityKeys    = 400_000
	capacityCallers = 256
)

// BenchmarkCapacityPerMillionKeys measures what per-key keys in use cost
// one store group (docs/capacity.md): 3 real storesvrs and one allocsvr, a
// space of capacityKeys keys in sections of 100k (step 10,000), every key
// used once by NextSeq (capacityCallers at once: concurrent first uses
// share a store write, as in figure 4b of docs/benchmarks.md; one NextSeqs
// of many fresh keys would not, its keys wait for their writes one after
// another). Each process's Go heap in use (after a GC forced through
// --pprof's heap profile) and resident set, and each store's data dir
// (apparent bytes), are sampled after the first capacityMid keys and after
// the rest: the change between the two samples, per 1M keys, is the cost
// of a key, without the fixed costs of the first keys (connections,
// section loads, the Raft log cache filling). References, the design's
// floors: the allocsvr's int64 per key (8 MB per 1M keys,
// x-alloc-heap-floor) and a store's used-set bit per key (125 kB per 1M,
// x-store-heap-floor, x-datadir-floor). Run it with
//
//	go test -tags hashicorpmetrics -run '^$' -bench CapacityPerMillionKeys -benchtime 1x ./bench/
func BenchmarkCapacityPerMillionKeys(b *testing.B) {
	for b.Loop() { // -benchtime 1x: each iteration starts a cluster
		c := startQuiet(b, launch.Options{Stores: 3, Allocs: 1, StoreArgs: []string{"--pprof"}, AllocArgs: []string{"--pprof"}})
		leader, _ := leaderURL(b, c)
		a := c.Allocs[0]
		createSpace(b, c, &seqsvrv1.CreateSpaceRequest{Space: "capacity", KeyCount: capacityKeys, SectionSize: 100_000, Step: 10_000})
		driveFirstUses(b, a.URL(), 0, capacityMid)
		st0 := seqStatus(b, c, a)
		mid := capacitySample(b, c)
		start := time.Now()
		driveFirstUses(b, a.URL(), capacityMid, capacityKeys)
		elapsed := time.Since(start)
		st1 := seqStatus(b, c, a)
		end := capacitySample(b, c)
		perM := func(v float64) float64 { return v * 1e6 / (capacityKeys - capacityMid) }
		ls, as := leader.Name, a.Name
		b.ReportMetric(perM(end.heap[as]-mid.heap[as]), "alloc-heap-B/1M-keys")
		b.ReportMetric(perM(end.rss[as]-mid.rss[as]), "alloc-rss-B/1M-keys")
		b.ReportMetric(perM(end.heap[as]-mid.heap[as])/8e6, "x-alloc-heap-floor")
		b.ReportMetric(perM(end.heap[ls]-mid.heap[ls]), "store-heap-B/1M-keys")
		b.ReportMetric(perM(end.rss[ls]-mid.rss[ls]), "store-rss-B/1M-keys")
		b.ReportMetric(perM(end.heap[ls]-mid.heap[ls])/125e3, "x-store-heap-floor")
		var dirMax float64
		for _, s := range c.Stores {
			dirMax = max(dirMax, end.dir[s.Name]-mid.dir[s.Name])
		}
		b.ReportMetric(perM(dirMax), "store-datadir-B/1M-keys")
		b.ReportMetric(perM(dirMax)/125e3, "x-datadir-floor")
		writes := float64(st1.GetFirstUseWrites() + st1.GetMaxSeqWrites() - st0.GetFirstUseWrites() - st0.GetMaxSeqWrites())
		b.ReportMetric(perM(writes), "raft-writes/1M-keys")
		b.ReportMetric(float64(capacityKeys-capacityMid)/elapsed.Seconds(), "first-uses/s")
		b.Logf("after %d and %d keys: leader %s heap %.1f -> %.1f MB, rss %.1f -> %.1f MB, data dir %.2f -> %.2f MB; allocsvr heap %.1f -> %.1f MB, rss %.1f -> %.1f MB; %.0f writes for the last %d keys in %v",
			capacityMid, capacityKeys, ls, mid.heap[ls]/1e6, end.heap[ls]/1e6, mid.rss[ls]/1e6, end.rss[ls]/1e6, mid.dir[ls]/1e6, end.dir[ls]/1e6,
			mid.heap[as]/1e6, end.heap[as]/1e6, mid.rss[as]/1e6, end.rss[as]/1e6, writes, capacityKeys-capacityMid, elapsed.Round(time.Second))
	}
}

type capacityFigures struct{ heap, rss, dir map[string]float64 }

// capacitySample forces a GC in every process (pprof's heap profile with
// gc=1), then reads its heap in use and RSS from /metrics, and each
// store's data dir size.
func capacitySample(tb testing.TB, c *launch.Cluster) capacityFigures {
	tb.Helper()
	f := capacityFigures{map[string]float64{}, map[string]float64{}, map[string]float64{}}
	for _, p := range c.All() {
		res, err := http.Get(p.URL() + "/debug/pprof/heap?gc=1")
		if err != nil {
			tb.Fatal(err)
		}
		res.Body.Close()
		res, err = http.Get(p.URL() + "/metrics")
		if err != nil {
			tb.Fatal(err)
		}
		lines := bufio.NewScanner(res.Body)
		for lines.Scan() {
			name, v, ok := strings.Cut(lines.Text(), " ")
			if !ok {
				continue
			}
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				continue
			}
			switch name {
			case "go_memstats_heap_inuse_bytes":
				f.heap[p.Name] = x
			case "process_resident_memory_bytes":
				f.rss[p.Name] = x
			}
		}
		res.Body.Close()
		if p.Kind != launch.KindStore {
			continue
		}
		var size int64
		err = filepath.WalkDir(p.DataDir, func(_ string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err == nil {
				size += info.Size()
			}
			return err
		})
		if err != nil {
			tb.Fatal(err)
		}
		f.dir[p.Name] = float64(size)
	}
	return f
}

// driveFirstUses calls NextSeq once for every key in [from, to) of space
// "capacity" through the allocsvr at url, capacityCallers at once.
func driveFirstUses(b *testing.B, url string, from, to uint64) {
	b.Helper()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: capacityCallers, MaxConnsPerHost: capacityCallers}}
	defer hc.CloseIdleConnections()
	sc := seqsvrv1connect.NewSeqServiceClient(hc, url)
	var next atomic.Uint64
	next.Store(from)
	var wg sync.WaitGroup
	errs := make(chan error, capacityCallers)
	for range capacityCallers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := next.Add(1) - 1; k < to; k = next.Add(1) - 1 {
				// Retried: a leader change under load answers unavailable.
				var err error
				for try := 0; try < 100; try++ {
					ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
					_, err = sc.NextSeq(ctx, connect.NewRequest(&seqsvrv1.NextSeqRequest{Space: "capacity", Key: k}))
					cancel()
					if err == nil {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				if err != nil {
					errs <- fmt.Errorf("key %d: %w", k, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}
