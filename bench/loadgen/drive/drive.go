// Package drive is the load generator's measuring loop: a fixed number of
// workers call one operation back to back for a fixed time, and the run is
// summed up as a result.Result. It is a package of its own so that load
// generators with other clients (bench/peers drives etcd and MariaDB with
// their official Go clients) measure with exactly the same loop.
package drive

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/seqsvr/seqsvr/bench/loadgen/result"
)

// Doer performs one operation and returns how many IDs it got.
type Doer func(ctx context.Context) (int, error)

// Options of one run.
type Options struct {
	Workers int
	// Warmup is run but not measured; Duration is measured.
	Warmup, Duration time.Duration
	// Bucket, when > 0, records a timeline of successes and errors in
	// slices of this length.
	Bucket time.Duration
	// Hist puts the whole latency histogram into the result.
	Hist bool
}

// Run builds one Doer per worker with mk and runs them. Latencies of
// failed calls are not recorded; failed calls are counted in Errors (and
// in the timeline).
func Run(mk func() (Doer, error), o Options) (result.Result, error) {
	doers := make([]Doer, o.Workers)
	for i := range doers {
		d, err := mk()
		if err != nil {
			return result.Result{}, err
		}
		doers[i] = d
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		total    = hdrhistogram.New(1, 60_000_000, 3)
		ops, ids atomic.Int64
		errs     atomic.Int64
		firstErr atomic.Value
		lastOK   atomic.Int64 // UnixNano of the latest success
		maxGap   atomic.Int64
		gapMu    sync.Mutex
		gaps     []result.Gap
	)
	ctx, cancel := context.WithTimeout(context.Background(), o.Warmup+o.Duration)
	defer cancel()
	start := time.Now()
	measureFrom := start.Add(o.Warmup)
	// noteGap records a time without success that ended at end.
	noteGap := func(prev, end int64) {
		d := end - prev
		raiseGap(&maxGap, d)
		if o.Bucket <= 0 || d < result.GapMinUs*1e3 {
			return
		}
		gapMu.Lock()
		if len(gaps) < 1000 {
			gaps = append(gaps, result.Gap{StartUs: (prev - measureFrom.UnixNano()) / 1e3, Us: d / 1e3})
		}
		gapMu.Unlock()
	}
	var nb int
	if o.Bucket > 0 {
		nb = int((o.Duration + o.Bucket - 1) / o.Bucket)
	}
	okB, errB := make([]atomic.Int64, nb), make([]atomic.Int64, nb)
	lastOK.Store(measureFrom.UnixNano())
	bucket := func(t time.Time) int {
		if nb == 0 {
			return -1
		}
		// A call that ends a hair after the run's end counts in the last slice.
		return min(max(int(t.Sub(measureFrom)/o.Bucket), 0), nb-1)
	}
	for _, do := range doers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := hdrhistogram.New(1, 60_000_000, 3)
			for ctx.Err() == nil {
				t0 := time.Now()
				n, err := do(ctx)
				if ctx.Err() != nil {
					break
				}
				if t0.Before(measureFrom) {
					continue
				}
				now := time.Now()
				if err != nil {
					if errs.Add(1) == 1 {
						firstErr.Store(err.Error())
					}
					if i := bucket(now); i >= 0 {
						errB[i].Add(1)
					}
					continue
				}
				_ = h.RecordValue(now.Sub(t0).Microseconds())
				ops.Add(1)
				ids.Add(int64(n))
				if i := bucket(now); i >= 0 {
					okB[i].Add(1)
				}
				noteGap(lastOK.Swap(now.UnixNano()), now.UnixNano())
			}
			mu.Lock()
			total.Merge(h)
			mu.Unlock()
		}()
	}
	wg.Wait()
	// The time from the last success to the end of the run is a gap too
	// (a service that never came back).
	noteGap(lastOK.Load(), measureFrom.Add(o.Duration).UnixNano())
	secs := o.Duration.Seconds()
	r := result.Result{
		Concurrency: o.Workers, Seconds: secs,
		Ops: ops.Load(), IDs: ids.Load(), Errors: errs.Load(),
		OpsPerSec: float64(ops.Load()) / secs, IDsPerSec: float64(ids.Load()) / secs,
		P50us: total.ValueAtQuantile(50), P99us: total.ValueAtQuantile(99),
		P999us: total.ValueAtQuantile(99.9), MaxUs: total.Max(),
		StartUnixNano: measureFrom.UnixNano(),
		MaxGapUs:      maxGap.Load() / 1e3,
	}
	if s, ok := firstErr.Load().(string); ok {
		r.FirstError = s
	}
	slices.SortFunc(gaps, func(a, b result.Gap) int { return cmp.Compare(a.StartUs, b.StartUs) })
	r.Gaps = gaps
	if nb > 0 {
		r.BucketMs = o.Bucket.Milliseconds()
		r.Timeline = make([]result.Bucket, nb)
		for i := range r.Timeline {
			r.Timeline[i] = result.Bucket{OK: okB[i].Load(), Errors: errB[i].Load()}
		}
	}
	if o.Hist {
		r.Hist = total.Export()
	}
	return r, nil
}

// raiseGap sets *g to d if d is larger.
func raiseGap(g *atomic.Int64, d int64) {
	for {
		cur := g.Load()
		if d <= cur || g.CompareAndSwap(cur, d) {
			return
		}
	}
}
