package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/raftconf"
)

// BenchmarkStoreReserve measures ReserveSegment against 3 real storesvr
// processes on loopback, driven by the separate loadgen process, beside a
// raw 3-node hashicorp/raft apply loop (raft, transport and raft-boltdb
// stores built by package raftconf, as the store's) measured in the same run.
// x-raw-raft is the result: 1.0 means the store adds nothing over raft
// itself. The primary figure uses loadgen's raw HTTP/1.1 client (Connect
// protocol, binary proto), whose own cost is close to nothing, as the raw
// loop's in-process Apply calls are; go-client-reserves/s is the same call
// through connect-go's client, what a typical Go caller sees.
func BenchmarkStoreReserve(b *testing.B) {
	c := startCluster(b, 3, 0)
	createTag(b, c, "bench", 1)
	_, url := leaderURL(b, c)
	rr, err := StartRawRaft(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer rr.Close()
	for _, conc := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("clients=%d", conc), func(b *testing.B) {
			args := []string{"-url", url, "-tag", "bench", "-count", "1", "-c", fmt.Sprint(conc), "-d", roundLoad.String(), "-warmup", warmup}
			var raws float64
			var rs []Result
			for i := 0; i < rounds; i++ {
				rate, err := rr.ApplyLoop(context.Background(), conc, roundLoad)
				if err != nil {
					b.Fatal(err)
				}
				raws += rate
				rs = append(rs, loadgen(b, append([]string{"-target", "store-raw"}, args...)...))
			}
			raw, r := raws/rounds, merge(rs)
			if r.Errors > 0 {
				b.Logf("%d errors, first: %s", r.Errors, r.FirstError)
			}
			g := loadgen(b, append([]string{"-target", "store-reserve"}, args...)...)
			b.ReportMetric(r.OpsPerSec, "reserves/s")
			b.ReportMetric(raw, "raw-applies/s")
			b.ReportMetric(r.OpsPerSec/raw, "x-raw-raft")
			b.ReportMetric(float64(r.P50us), "p50-us")
			b.ReportMetric(float64(r.P99us), "p99-us")
			b.ReportMetric(float64(r.P999us), "p999-us")
			b.ReportMetric(g.OpsPerSec, "go-client-reserves/s")
		})
	}
}

// BenchmarkStoreFailover SIGKILLs the leader 5 times while a client keeps
// reserving through every member, and reports the median time from the kill
// to the first reservation that succeeds, beside the election timeout it is
// bounded by.
func BenchmarkStoreFailover(b *testing.B) {
	c := startCluster(b, 3, 0)
	createTag(b, c, "failover", 1)
	var gaps []time.Duration
	for i := 0; i < 5; i++ {
		leader, _ := leaderURL(b, c)
		if err := leader.Kill(); err != nil {
			b.Fatal(err)
		}
		killed := time.Now()
		gap, err := firstSuccessAfter(c.StoreURLs(), killed, leader.URL())
		if err != nil {
			b.Fatal(err)
		}
		gaps = append(gaps, gap)
		restart(b, c, leader)
	}
	med := median(gaps)
	b.Logf("failover gaps: %v", gaps)
	b.ReportMetric(float64(med.Milliseconds()), "median-failover-ms")
	b.ReportMetric(float64(med)/float64(raftconf.DefaultElectionTimeout), "x-election-timeout")
}

// firstSuccessAfter tries the surviving members in turn until one commits a
// reservation, and returns how long after the kill that was.
func firstSuccessAfter(urls []string, killed time.Time, dead string) (time.Duration, error) {
	deadline := killed.Add(30 * time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		u := urls[i%len(urls)]
		if u == dead {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		_, err := storeClient(u).ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "failover", Size: 1}))
		cancel()
		if err == nil {
			return time.Since(killed), nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return 0, fmt.Errorf("no reservation succeeded within 30s of the kill")
}
