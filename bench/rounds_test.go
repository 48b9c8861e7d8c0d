package bench

import (
	"slices"
	"testing"
	"time"
)

// rounds is how many times each side of a ratio is measured, alternating
// with the other side, and roundLoad how long each measurement runs. On a
// shared 2-core box the background load changes from second to second;
// alternating short runs lets those changes hit both sides of a ratio
// alike, where one long run of each would compare different moments.
const (
	rounds    = 3
	roundLoad = time.Second
	warmup    = "200ms"
)

// merge sums several runs of one target: throughput is total operations
// over total measured time; p50 is the median of the runs' p50s, p99 and
// p999 the worst of the runs' (so a bad second is never averaged away).
func merge(rs []Result) Result {
	if len(rs) == 0 {
		return Result{}
	}
	out := Result{Target: rs[0].Target, Concurrency: rs[0].Concurrency, Count: rs[0].Count}
	var p50s []int64
	for _, r := range rs {
		out.Ops += r.Ops
		out.IDs += r.IDs
		out.Errors += r.Errors
		out.Seconds += r.Seconds
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
		p50s = append(p50s, r.P50us)
		out.P99us = max(out.P99us, r.P99us)
		out.P999us = max(out.P999us, r.P999us)
	}
	slices.Sort(p50s)
	out.P50us = p50s[len(p50s)/2]
	if out.Seconds > 0 {
		out.OpsPerSec = float64(out.Ops) / out.Seconds
		out.IDsPerSec = float64(out.IDs) / out.Seconds
	}
	return out
}

// reportLoad reports a target's calls per second and latency percentiles.
func reportLoad(b *testing.B, r Result) {
	b.ReportMetric(r.OpsPerSec, "calls/s")
	b.ReportMetric(float64(r.P50us), "p50-us")
	b.ReportMetric(float64(r.P99us), "p99-us")
	b.ReportMetric(float64(r.P999us), "p999-us")
}
