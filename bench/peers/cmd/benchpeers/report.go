package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/seqsvr/seqsvr/bench/plot"
)

type kv struct{ k, v string }

// report is everything one run measured.
type report struct {
	cfg                config
	began              time.Time
	elapsed            time.Duration
	machine            []kv
	loadStart, loadEnd string
	versions, settings []kv
	skipped, failures  []string
	notInstalled       []string // of skipped, the peers not installed on this machine
	etcdElectionMs     int

	durable, ids []*series
	failovers    []failoverGroup
	snowflake    []snowflakeRow
	snowflakeErr error
}

func machineInfo() []kv {
	out := []kv{{"CPU", cpuModel() + fmt.Sprintf(", %d cores", runtime.NumCPU())}}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		out = append(out, kv{"kernel", "Linux " + strings.TrimSpace(string(b))})
	}
	out = append(out, kv{"Go", runtime.Version()})
	return out
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func gitHead() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// --- snowflake peers ---

type snowflakeRow struct {
	name                  string
	nsPerOp, idsPerMs, of float64
}

var benchLine = regexp.MustCompile(`^BenchmarkPeers/(\S+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns/op(.*)$`)

// runSnowflake runs the existing snowflake peer module's benchmark (seqsvr's
// generator, bwmarrin/snowflake, sonyflake) and parses its lines.
func runSnowflake(ctx context.Context, dir, bt string) ([]snowflakeRow, error) {
	cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-bench", ".", "-benchtime", bt, "-count", "1")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("go test -bench in %s: %w: %s", dir, err, firstLine(string(out)))
	}
	var rows []snowflakeRow
	for _, line := range strings.Split(string(out), "\n") {
		m := benchLine.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		r := snowflakeRow{name: m[1]}
		r.nsPerOp, _ = strconv.ParseFloat(m[2], 64)
		f := strings.Fields(m[3])
		for i := 0; i+1 < len(f); i += 2 {
			v, _ := strconv.ParseFloat(f[i], 64)
			switch f[i+1] {
			case "ids/ms":
				r.idsPerMs = v
			case "of-limit":
				r.of = v
			}
		}
		rows = append(rows, r)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("no BenchmarkPeers lines in the output of go test -bench in %s", dir)
	}
	return rows, nil
}

// --- lookups ---

func find(ss []*series, key string) *series {
	for _, s := range ss {
		if s.t.key == key {
			return s
		}
	}
	return nil
}

// at is key's result at c clients, ok false when it was not measured.
func at(ss []*series, key string, c int) (Result, bool) {
	s := find(ss, key)
	if s == nil {
		return Result{}, false
	}
	r, ok := s.res[c]
	return r, ok
}

func ratio(a, b float64) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func num(v float64) string {
	switch {
	case v >= 100:
		return commas(int64(v + 0.5))
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	return b.String()
}

func us(v int64) string {
	if v >= 10_000 {
		return fmt.Sprintf("%.1f ms", float64(v)/1000)
	}
	return fmt.Sprintf("%d µs", v)
}

// headlineClients is where the goals are judged: 64 clients when measured,
// else the largest count below it.
func (r *report) headlineClients() int {
	best := r.cfg.clients[0]
	for _, c := range r.cfg.clients {
		if c <= 64 && c > best {
			best = c
		}
	}
	return best
}

// --- writing ---

func (r *report) write() error {
	plots := filepath.Join(r.cfg.outDir, "plots")
	if err := os.MkdirAll(plots, 0o755); err != nil {
		return err
	}
	charts, err := r.charts()
	if err != nil {
		return err
	}
	for name, svg := range charts {
		if err := os.WriteFile(filepath.Join(plots, name), svg, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(r.cfg.outDir, "benchmarks-peers.md"), []byte(r.markdown()), 0o644)
}

var clientTicks = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}

func throughputChart(title, ylabel string, ss []*series, ids bool) plot.Chart {
	ch := plot.Chart{Title: title, X: plot.Axis{Label: "concurrent clients", Log: true, Ticks: clientTicks}, Y: plot.Axis{Label: ylabel, Log: true}}
	// The x axis spans exactly the client counts measured.
	for _, s := range ss {
		for c := range s.res {
			if ch.X.Min == 0 || float64(c) < ch.X.Min {
				ch.X.Min = float64(c)
			}
			ch.X.Max = max(ch.X.Max, float64(c))
		}
	}
	for _, s := range ss {
		var pts []plot.Point
		cs := slices.Sorted(maps.Keys(s.res))
		for _, c := range cs {
			v := s.res[c].OpsPerSec
			if ids {
				v = s.res[c].IDsPerSec
			}
			if v > 0 {
				pts = append(pts, plot.Point{X: float64(c), Y: v})
			}
		}
		if len(pts) > 0 {
			ch.Series = append(ch.Series, plot.Series{Name: s.t.label, Points: pts, Dashed: !strings.HasPrefix(s.t.key, "seqsvr") && !strings.HasPrefix(s.t.key, "alloc")})
		}
	}
	return ch
}

// cdfChart draws each series' latency CDF at c clients from its merged
// histogram: x is latency, y the fraction of calls at or below it.
func cdfChart(title string, ss []*series, c int) plot.Chart {
	ch := plot.Chart{Title: title, X: plot.Axis{Label: "latency (µs, log)", Log: true},
		Y: plot.Axis{Label: "fraction of calls ≤ latency", Min: 0, Max: 1}}
	for _, s := range ss {
		res, ok := s.res[c]
		if !ok || res.Hist == nil {
			continue
		}
		h := hdrhistogram.Import(res.Hist)
		if h.TotalCount() == 0 {
			continue
		}
		var pts []plot.Point
		for _, q := range []float64{0.1, 1, 5, 10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 97, 99, 99.5, 99.9, 99.99, 100} {
			v := max(h.ValueAtQuantile(q), 1)
			pts = append(pts, plot.Point{X: float64(v), Y: q / 100})
		}
		ch.Series = append(ch.Series, plot.Series{Name: s.t.label, Points: pts, Dashed: !strings.HasPrefix(s.t.key, "seqsvr") && !strings.HasPrefix(s.t.key, "alloc")})
	}
	return ch
}

// timelineCharts draw each leader-kill run as calls/s and errors/s per
// 100 ms, with the kill at t=0.
func (r *report) timelineCharts() (plot.Chart, plot.Chart) {
	ok := plot.Chart{Title: fmt.Sprintf("Leader kill: successful calls per 100 ms, %d clients", r.cfg.failClients),
		X: plot.Axis{Label: "seconds from the SIGKILL of the leader"}, Y: plot.Axis{Label: "% of the run's rate before the kill", Min: 0, Max: 300}, Markers: []plot.Marker{{X: 0, Label: "leader killed"}}}
	bad := plot.Chart{Title: "Leader kill: errors the clients saw per 100 ms",
		X: plot.Axis{Label: "seconds from the SIGKILL of the leader"}, Y: plot.Axis{Label: "errors per 100 ms"}, Markers: []plot.Marker{{X: 0, Label: "leader killed"}}, Height: 300}
	for i, g := range r.failovers {
		f, ok2 := g.median()
		if !ok2 || f.res.BucketMs == 0 {
			continue
		}
		var po, pe []plot.Point
		step := float64(f.res.BucketMs) / 1000
		// Each run as a share of its own rate before the kill, so a
		// 40,000 calls/s allocsvr and a 40 reservations/s etcd both show.
		before, _ := rates(f)
		if before <= 0 {
			continue
		}
		for j, b := range f.res.Timeline {
			x := float64(j)*step + step/2 - f.killAt.Seconds()
			po = append(po, plot.Point{X: x, Y: 100 * float64(b.OK) / step / before})
			pe = append(pe, plot.Point{X: x, Y: float64(b.Errors)})
		}
		color := []string{"#1f77b4", "#2ca02c", "#d62728"}[i%3]
		name := fmt.Sprintf("%s (100%% = %s calls/s; the kill with the median stall)", f.label, num(before))
		ok.Series = append(ok.Series, plot.Series{Name: name, Points: po, Color: color, Dashed: strings.HasPrefix(f.label, "etcd")})
		bad.Series = append(bad.Series, plot.Series{Name: f.label, Points: pe, Color: color, Dashed: strings.HasPrefix(f.label, "etcd")})
	}
	ok.Width, bad.Width = 900, 900
	return ok, bad
}

func (r *report) charts() (map[string][]byte, error) {
	hc := r.headlineClients()
	out := map[string][]byte{}
	add := func(name string, c plot.Chart) error {
		if len(c.Series) == 0 {
			return nil
		}
		b, err := c.SVG()
		if err != nil {
			return err
		}
		out[name] = b
		return nil
	}
	tlOK, tlErr := r.timelineCharts()
	for name, c := range map[string]plot.Chart{
		"peers-durable-throughput.svg": throughputChart("Durable write path: reservations/s (fsync per commit)", "reservations/s (log)", r.durable, false),
		"peers-id-throughput.svg":      throughputChart("ID path: calls/s (1 ID per call; 1000 for count=1000, INCRBY)", "calls/s (log)", r.ids, false),
		"peers-durable-cdf.svg":        cdfChart(fmt.Sprintf("Durable write path: latency CDF at %d clients", hc), r.durable, hc),
		"peers-id-cdf.svg":             cdfChart(fmt.Sprintf("ID path: latency CDF at %d clients", hc), r.ids, hc),
		"peers-failover.svg":           tlOK,
		"peers-failover-errors.svg":    tlErr,
	} {
		if err := add(name, c); err != nil {
			return nil, err
		}
	}
	return out, nil
}
