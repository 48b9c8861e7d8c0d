package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/seqsvr/seqsvr/bench/loadgen/result"
)

// Result is one load generator run (bench/loadgen and peerload print the
// same JSON line).
type Result = result.Result

// target is one system driven by a load generator process: bin with args,
// to which the run adds -c, -d, -warmup and -hist.
type target struct {
	key, label string
	bin        string
	args       []string
}

// runOnce runs t with conc workers for d (after warm) and parses its line.
func runOnce(ctx context.Context, t target, conc int, warm, d time.Duration, extra ...string) (Result, error) {
	args := append(append([]string{}, t.args...), "-c", strconv.Itoa(conc), "-d", d.String(), "-warmup", warm.String(), "-hist")
	args = append(args, extra...)
	cmd := exec.CommandContext(ctx, t.bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Result{}, fmt.Errorf("%s %v: %w: %s", t.bin, args, err, stderr.Bytes())
	}
	var r Result
	if err := json.Unmarshal(out, &r); err != nil {
		return Result{}, fmt.Errorf("%s: output %q: %w", t.key, out, err)
	}
	return r, nil
}

// series holds one target's merged result per client count.
type series struct {
	t   target
	res map[int]Result
}

// sweep measures every target at every client count: for each count, the
// rounds alternate over the targets (a1 b1 c1 a2 b2 c2 ...), so a change in
// the shared machine's load hits every side of a ratio alike. A failed run
// is logged and leaves its point out; the report says which.
func sweep(ctx context.Context, log *slog.Logger, ts []target, clients []int, rounds int, warm, d time.Duration, failures *[]string) []*series {
	out := make([]*series, len(ts))
	for i, t := range ts {
		out[i] = &series{t: t, res: map[int]Result{}}
	}
	for _, c := range clients {
		runs := make([][]Result, len(ts))
		for r := 0; r < rounds; r++ {
			for i, t := range ts {
				if ctx.Err() != nil {
					return out
				}
				res, err := runOnce(ctx, t, c, warm, d)
				if err != nil {
					log.Warn("run failed", "target", t.key, "clients", c, "err", err)
					*failures = append(*failures, fmt.Sprintf("%s at %d clients: %v", t.label, c, firstLine(err.Error())))
					continue
				}
				runs[i] = append(runs[i], res)
			}
		}
		for i := range ts {
			if len(runs[i]) > 0 {
				m := merge(runs[i])
				out[i].res[c] = m
				log.Info("measured", "target", ts[i].key, "clients", c, "calls/s", int(m.OpsPerSec), "p50us", m.P50us, "p99us", m.P99us, "errors", m.Errors)
			}
		}
	}
	return out
}

func firstLine(s string) string {
	if i := bytes.IndexByte([]byte(s), '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// merge sums rounds of one target: throughput is all calls over all
// measured time, percentiles come from the merged histograms.
func merge(rs []Result) Result {
	out := Result{Target: rs[0].Target, Concurrency: rs[0].Concurrency, Count: rs[0].Count}
	h := hdrhistogram.New(1, 60_000_000, 3)
	for _, r := range rs {
		out.Ops += r.Ops
		out.IDs += r.IDs
		out.Errors += r.Errors
		out.Attempts += r.Attempts
		out.Seconds += r.Seconds
		out.MaxGapUs = max(out.MaxGapUs, r.MaxGapUs)
		if out.FirstError == "" {
			out.FirstError = r.FirstError
		}
		if r.Hist != nil {
			h.Merge(hdrhistogram.Import(r.Hist))
		}
	}
	if out.Seconds > 0 {
		out.OpsPerSec = float64(out.Ops) / out.Seconds
		out.IDsPerSec = float64(out.IDs) / out.Seconds
	}
	out.P50us, out.P99us, out.P999us, out.MaxUs = h.ValueAtQuantile(50), h.ValueAtQuantile(99), h.ValueAtQuantile(99.9), h.Max()
	out.Hist = h.Export()
	return out
}

// failoverRun is one run through a leader kill.
type failoverRun struct {
	label    string
	res      Result
	killAt   time.Duration // from the start of the measured time
	killed   string        // which member
	failed   string        // why there is no result
	electMs  int
	recovery string // what brought the service back
}

// failoverGroup is the same leader-kill run repeated.
type failoverGroup struct {
	label string
	runs  []failoverRun
}

// done are the runs that produced a result.
func (g failoverGroup) done() []failoverRun {
	var out []failoverRun
	for _, f := range g.runs {
		if f.failed == "" {
			out = append(out, f)
		}
	}
	return out
}

// stallUs is how long after the kill the clients' calls succeeded again
// (µs): the latest end of a gap (at least result.GapMinUs without a
// success) that began no later than 300 ms after the kill and ended after
// it. Calls in flight may still succeed just after a kill, and etcd's
// compare-and-raise has gaps of its own (every client losing the race), so
// the first gap around the kill is not always the stall. 0 when no such
// gap exists: the clients never went 10 ms without a success.
func (f failoverRun) stallUs() int64 {
	k := f.killAt.Microseconds()
	var s int64
	for _, g := range f.res.Gaps {
		if end := g.StartUs + g.Us; end > k && g.StartUs <= k+300_000 {
			s = max(s, end-k)
		}
	}
	return s
}

// median is the run with the median stall (the upper one of an
// even count); ok false when no run produced a result.
func (g failoverGroup) median() (failoverRun, bool) {
	d := g.done()
	if len(d) == 0 {
		return failoverRun{}, false
	}
	slices.SortStableFunc(d, func(a, b failoverRun) int { return cmp.Compare(a.stallUs(), b.stallUs()) })
	return d[len(d)/2], true
}

// throughKill starts t with a timeline, kills (by calling kill) killAfter
// into its measured time, and waits for the run to end.
func throughKill(ctx context.Context, t target, conc int, warm, d, killAfter time.Duration, kill func() (string, error)) (Result, time.Duration, string, error) {
	type out struct {
		r   Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		r, err := runOnce(ctx, t, conc, warm, d, "-timeline", "100ms")
		ch <- out{r, err}
	}()
	// The generator needs a moment to start and connect; the kill's exact
	// place on its timeline comes from its own start stamp below.
	time.Sleep(300*time.Millisecond + warm + killAfter)
	killed, kerr := kill()
	at := time.Now()
	o := <-ch
	if kerr != nil {
		return Result{}, 0, "", fmt.Errorf("kill: %w", kerr)
	}
	if o.err != nil {
		return Result{}, 0, killed, o.err
	}
	return o.r, at.Sub(time.Unix(0, o.r.StartUnixNano)), killed, nil
}
