package bench

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

const (
	allocLoad = 3 * time.Second
	allocConc = 64
)

func storeClient(url string) seqsvrv1connect.StoreServiceClient {
	return seqsvrv1connect.NewStoreServiceClient(http.DefaultClient, url)
}

// BenchmarkAllocNetwork drives one allocsvr (3 real storesvrs behind it)
// from the separate loadgen process, and in the same run drives a bare
// net/http handler (the floor of the HTTP stack) and Redis INCR with the
// same generator and concurrency. The x- metrics are the results.
func BenchmarkAllocNetwork(b *testing.B) {
	c := startCluster(b, 3, 1, "--max-step", "1000000")
	createTag(b, c, "bench", 100000)
	alloc := c.Allocs[0].URL()

	bareAddr := freeAddr(b)
	startProc(b, filepath.Join(bins(b), "loadgen"), "-serve", bareAddr)
	waitHTTP(b, "http://"+bareAddr+"/id")
	bare := loadgen(b, "-target", "http", "-url", "http://"+bareAddr+"/id", "-c", fmt.Sprint(allocConc), "-d", allocLoad.String())

	var redis *Result
	if path, err := exec.LookPath("redis-server"); err == nil {
		addr := freeAddr(b)
		_, port, _ := splitHostPort(addr)
		startProc(b, path, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
		waitTCP(b, addr)
		r := loadgen(b, "-target", "redis", "-addr", addr, "-c", fmt.Sprint(allocConc), "-d", allocLoad.String())
		redis = &r
	} else {
		b.Logf("redis-server not installed (make bench installs it): no Redis reference in this run")
	}

	cases := []struct{ target, count string }{
		{"alloc-connect", "1"}, {"alloc-grpc", "1"}, {"alloc-connect", "1000"}, {"alloc-grpc", "1000"},
	}
	for _, tc := range cases {
		b.Run(tc.target+"/count="+tc.count, func(b *testing.B) {
			// Warm the buffers so the measured run does not include the first load.
			loadgen(b, "-target", tc.target, "-url", alloc, "-tag", "bench", "-count", tc.count, "-c", "4", "-d", "300ms", "-warmup", "0s")
			r := loadgen(b, "-target", tc.target, "-url", alloc, "-tag", "bench", "-count", tc.count,
				"-c", fmt.Sprint(allocConc), "-d", allocLoad.String())
			if r.Errors > 0 {
				b.Errorf("%d errors, first: %s", r.Errors, r.FirstError)
			}
			b.ReportMetric(r.OpsPerSec, "calls/s")
			b.ReportMetric(r.IDsPerSec, "ids/s")
			b.ReportMetric(float64(r.P99us), "p99-us")
			b.ReportMetric(float64(r.P999us), "p999-us")
			b.ReportMetric(r.OpsPerSec/bare.OpsPerSec, "x-bare-http")
			if redis != nil {
				b.ReportMetric(r.OpsPerSec/redis.OpsPerSec, "x-redis-incr")
			}
		})
	}
	b.Logf("references: bare net/http %.0f req/s p999 %dus", bare.OpsPerSec, bare.P999us)
	if redis != nil {
		b.Logf("references: redis INCR %.0f ops/s p999 %dus", redis.OpsPerSec, redis.P999us)
	}
}

// BenchmarkAllocLeaderKill compares the allocsvr's p999 while the store
// leader is SIGKILLed mid-run with the p999 of an identical run without
// faults: the double buffer should hide the failover from callers.
func BenchmarkAllocLeaderKill(b *testing.B) {
	c := startCluster(b, 3, 1)
	createTag(b, c, "kill", 1000)
	alloc := c.Allocs[0].URL()
	args := []string{"-target", "alloc-connect", "-url", alloc, "-tag", "kill", "-count", "1", "-c", "16", "-d", "6s"}
	calm := loadgen(b, args...)

	leader, _ := leaderURL(b, c)
	done := make(chan Result, 1)
	go func() { done <- loadgen(b, args...) }()
	time.Sleep(2500 * time.Millisecond) // warm-up (500ms) plus 2s into the measured run
	if err := leader.Kill(); err != nil {
		b.Fatal(err)
	}
	faulty := <-done
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = leader.Restart(ctx)

	if faulty.Errors > 0 {
		b.Errorf("%d errors during the leader kill, first: %s", faulty.Errors, faulty.FirstError)
	}
	b.ReportMetric(float64(calm.P999us), "calm-p999-us")
	b.ReportMetric(float64(faulty.P999us), "kill-p999-us")
	b.ReportMetric(float64(faulty.P999us)/float64(calm.P999us), "x-calm-p999")
}
