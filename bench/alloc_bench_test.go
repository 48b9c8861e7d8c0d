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

const allocConc = 64

func storeClient(url string) seqsvrv1connect.StoreServiceClient {
	return seqsvrv1connect.NewStoreServiceClient(http.DefaultClient, url)
}

// BenchmarkAllocNetwork drives one allocsvr (3 real storesvrs behind it)
// from the separate loadgen process, and drives with the same generator
// and concurrency three references: a bare net/http handler (the floor of
// the standard HTTP stack), the same handler behind the services' HTTP/1.1
// front (the floor of the stack the allocsvr runs on), and Redis INCR. Each
// case alternates short runs of itself and of its references (see rounds),
// so a change in the shared box's load moves both sides of a ratio alike.
// The x- metrics are the results.
//
// Two client families, each compared with floors driven by that family:
//   - raw: loadgen's hand-written HTTP/1.1 client, one kept-alive
//     connection per worker, the same shape and about the same cost as its
//     RESP client for Redis. alloc-raw is a Connect unary POST with a binary
//     proto body, leaf-raw the Leaf API GET.
//   - go: connect-go's client over HTTP/1.1 (alloc-connect, binary proto)
//     and over h2c (alloc-grpc); the floors are driven by net/http's client
//     (over HTTP/1.1, which is what the front serves; gRPC needs HTTP/2 and
//     always reaches net/http).
//
// x-redis-incr (single-ID cases) compares calls per second with Redis INCR
// driven by loadgen's RESP client.
func BenchmarkAllocNetwork(b *testing.B) {
	c := startCluster(b, 3, 1, "--max-step", "1000000")
	createTag(b, c, "bench", 100000)
	alloc := c.Allocs[0].URL()
	conc := fmt.Sprint(allocConc)

	bareAddr, frontAddr := serveBare(b, "-serve"), serveBare(b, "-serve-front")
	bareTarget := map[string]string{"raw": "http-raw", "go": "http"}
	floor := func(addr, family string) Result {
		return loadgen(b, "-target", bareTarget[family], "-url", "http://"+addr+"/id", "-c", conc, "-d", roundLoad.String(), "-warmup", warmup)
	}

	redisAddr := ""
	if path, err := exec.LookPath("redis-server"); err == nil {
		port := freePort(b)
		redisAddr = "127.0.0.1:" + port
		startProc(b, path, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no")
		waitTCP(b, redisAddr)
	} else {
		b.Logf("redis-server not installed (make bench installs it): no Redis reference in this run")
	}

	cases := []struct{ target, count, family string }{
		{"alloc-raw", "1", "raw"}, {"leaf-raw", "1", "raw"}, {"alloc-connect", "1", "go"}, {"alloc-grpc", "1", "go"},
		{"alloc-raw", "1000", "raw"}, {"alloc-connect", "1000", "go"}, {"alloc-grpc", "1000", "go"},
	}
	for _, tc := range cases {
		b.Run(tc.target+"/count="+tc.count, func(b *testing.B) {
			// Warm the buffers so the measured run does not include the first load.
			loadgen(b, "-target", tc.target, "-url", alloc, "-tag", "bench", "-count", tc.count, "-c", "4", "-d", "300ms", "-warmup", "0s")
			var bares, fronts, rediss, rs []Result
			for i := 0; i < rounds; i++ {
				bares = append(bares, floor(bareAddr, tc.family))
				fronts = append(fronts, floor(frontAddr, tc.family))
				if redisAddr != "" && tc.count == "1" {
					rediss = append(rediss, loadgen(b, "-target", "redis", "-addr", redisAddr, "-c", conc, "-d", roundLoad.String(), "-warmup", warmup))
				}
				rs = append(rs, loadgen(b, "-target", tc.target, "-url", alloc, "-tag", "bench", "-count", tc.count,
					"-c", conc, "-d", roundLoad.String(), "-warmup", warmup))
			}
			bare, front, r := merge(bares), merge(fronts), merge(rs)
			if r.Errors > 0 {
				b.Errorf("%d errors, first: %s", r.Errors, r.FirstError)
			}
			reportLoad(b, r)
			b.ReportMetric(r.IDsPerSec, "ids/s")
			b.ReportMetric(bare.OpsPerSec, "bare-req/s")
			b.ReportMetric(r.OpsPerSec/bare.OpsPerSec, "x-bare-http")
			b.ReportMetric(front.OpsPerSec, "front-req/s")
			b.ReportMetric(r.OpsPerSec/front.OpsPerSec, "x-bare-front")
			if len(rediss) > 0 {
				redis := merge(rediss)
				b.ReportMetric(redis.OpsPerSec, "redis-ops/s")
				b.ReportMetric(r.OpsPerSec/redis.OpsPerSec, "x-redis-incr")
			}
		})
	}
}

// serveBare starts loadgen's bare reference handler (mode -serve or
// -serve-front) and answers its address once it serves.
func serveBare(tb testing.TB, mode string) string {
	tb.Helper()
	addr := "127.0.0.1:" + freePort(tb)
	startProc(tb, filepath.Join(bins(tb), "loadgen"), mode, addr)
	waitHTTP(tb, "http://"+addr+"/id")
	return addr
}

// BenchmarkAllocLeaderKill compares the allocsvr's p999 while the store
// leader is SIGKILLed mid-run with the p999 of an identical run without
// faults: the double buffer should hide the failover from callers.
func BenchmarkAllocLeaderKill(b *testing.B) {
	c := startCluster(b, 3, 1)
	createTag(b, c, "kill", 1000)
	alloc := c.Allocs[0].URL()
	args := []string{"-target", "alloc-raw", "-url", alloc, "-tag", "kill", "-count", "1", "-c", "16", "-d", "6s"}
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
