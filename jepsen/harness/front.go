package harness

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// frontMetric counts the requests a process's HTTP/1.1 front answered
// without net/http, handoffMetric the connections it handed to net/http
// by reason (internal/serve).
const (
	frontMetric   = "seqsvr_http_fast_requests_total"
	handoffMetric = "seqsvr_http_handoffs_total"
)

// frontEvery is how often frontTally reads the counters during a run.
const frontEvery = 2 * time.Second

// frontTally reads every process's front counters from its /metrics
// (open, no token) during the run and adds them up over its lifetimes: a
// check from the servers' side that the HTTP/1.1 paths reached the
// fronts. A lifetime's count is its last reading, so what a process
// answered in the frontEvery before a kill is not counted.
type frontTally struct {
	hc *http.Client
	mu sync.Mutex
	// by process name: the lifetime of the last reading, its samples,
	// and the sums of the lifetimes before it.
	life map[string]int
	last map[string]map[string]float64
	sum  map[string]map[string]float64
}

func newFrontTally(hc *http.Client) *frontTally {
	return &frontTally{hc: hc, life: map[string]int{}, last: map[string]map[string]float64{}, sum: map[string]map[string]float64{}}
}

// run reads procs() every frontEvery until ctx ends.
func (f *frontTally) run(ctx context.Context, procs func() []*launch.Proc) {
	tick := time.NewTicker(frontEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f.read(ctx, procs())
		}
	}
}

// read takes one reading of every running, unpaused process.
func (f *frontTally) read(ctx context.Context, procs []*launch.Proc) {
	for _, p := range procs {
		if !p.Running() || p.Paused() {
			continue
		}
		life := p.Starts()
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		samples, ok := scrape(cctx, f.hc, p.URL()+"/metrics")
		cancel()
		if !ok {
			continue
		}
		f.mu.Lock()
		if f.life[p.Name] != life {
			if f.sum[p.Name] == nil {
				f.sum[p.Name] = map[string]float64{}
			}
			for k, v := range f.last[p.Name] {
				f.sum[p.Name][k] += v
			}
			f.life[p.Name] = life
		}
		kept := map[string]float64{}
		for k, v := range samples {
			if k == frontMetric || strings.HasPrefix(k, handoffMetric+"{") {
				kept[k] = v
			}
		}
		f.last[p.Name] = kept
		f.mu.Unlock()
	}
}

// figures are the totals by process: requests answered, and connections
// handed off by reason.
func (f *frontTally) figures() (answered map[string]int64, handoffs map[string]map[string]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	answered, handoffs = map[string]int64{}, map[string]map[string]int64{}
	for name, last := range f.last {
		for k, v := range last {
			v += f.sum[name][k]
			switch {
			case k == frontMetric:
				answered[name] = int64(v)
			case v > 0:
				if handoffs[name] == nil {
					handoffs[name] = map[string]int64{}
				}
				reason := strings.TrimSuffix(strings.TrimPrefix(k, handoffMetric+`{reason="`), `"}`)
				handoffs[name][reason] = int64(v)
			}
		}
	}
	return answered, handoffs
}

// scrape reads the samples of a Prometheus text page, by name with
// labels.
func scrape(ctx context.Context, hc *http.Client, url string) (map[string]float64, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, false
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, false
	}
	out := map[string]float64{}
	for line := range strings.SplitSeq(string(body), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if f, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = f
		}
	}
	return out, true
}
