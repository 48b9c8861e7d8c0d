package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

const (
	secClientToken = "bench-client-token-0123456789"
	secAllocToken  = "bench-alloc-token-0123456789"
	secAdminToken  = "bench-admin-token-0123456789"
)

// secRounds and authRounds are how many rounds BenchmarkSecurity runs of
// each ratio's sides. A single round's ratio on the shared 2-core box lands
// anywhere in about ±15% even between two identical processes (a 1-second
// run of one process against the same process swings as much: the box
// settles into faster and slower regimes for seconds at a time, pinned to
// cores or not), three times the auth target's margin; the mean of many
// short interleaved rounds, each paired with its own reference, moves far
// less. Auth, whose margin is 5%, gets more rounds than TLS (25%).
const (
	secRounds  = 9
	authRounds = 21
)

// BenchmarkSecurity is the cost of access control and of TLS per call:
// NextIDs count=1 from loadgen's raw HTTP/1.1 client, 64
// workers on kept-alive connections, against allocsvrs that differ in one
// setting each, all on the same 3 storesvrs (which check tokens: the
// allocsvrs present theirs with --store-token-file).
//
// Each ratio runs authRounds or secRounds rounds; a round runs every side
// once for roundLoad, in an order shuffled afresh each round (a fixed
// seed, so every run uses the same orders), and yields one ratio per pair from that
// round's runs alone. A ratio is reported as the geometric mean over the
// rounds (x-NAME) with its 95% confidence interval (x-NAME-lo, x-NAME-hi)
// and median (x-NAME-med), and every round's value is logged. Calls/s and
// latencies are of all rounds merged.
//
//   - auth: --auth-file vs the same allocsvr without it, both with the
//     HTTP/1.1 front (which checks tokens itself). Each side is two
//     identical processes (auth and auth2 with --auth-file, plain and
//     twin without), since two identical processes differ by several
//     percent over a whole iteration, and all four are sent the same
//     bytes, token included (plain and twin ignore it). x-noauth = mean of
//     auth and auth2 / mean of plain and twin per round: the server's cost
//     of the check (target: >= 1/1.05, at most 5% more time per call).
//     Controls where nothing differs: x-twin = twin / plain and x-twin-auth
//     = auth2 / auth. x-noauth-bare = auth / plain-bare (plain called
//     without the header): the check plus the header's bytes on both ends,
//     what turning auth on costs in all. x-noauth-cpu = plain's and twin's
//     CPU time per call (from /proc, over all rounds) / auth's and
//     auth2's, with cpu-us/call (at USER_HZ 100) for both sides.
//   - tls: --tls-cert/--tls-key vs plain, with the front behind the
//     handshake: x-plain-front = TLS / plain, both with the front (the
//     target: >= 1/1.25 = 0.80, at most 25% more time per call). The same
//     pair with --fast-http=false on both, x-plain-net = tls-net /
//     plain-net, is the cost of TLS when net/http serves everything.
func BenchmarkSecurity(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: real-process benchmark")
	}
	dir := b.TempDir()
	ca := tlstest.NewCA(b)
	cert, key := ca.Issue(b, "alloc", "127.0.0.1")
	storeAuth := writeFile(b, dir, "store-auth.json", authFile(authEntry{"allocsvr", secAllocToken, "alloc"}, authEntry{"ops", secAdminToken, "admin"}))
	// A list of ten, as a deployment with a few applications has: the
	// check looks at every entry.
	clients := []authEntry{{"app", secClientToken, "client"}}
	for i := range 9 {
		clients = append(clients, authEntry{fmt.Sprintf("other%d", i), fmt.Sprintf("other-client-token-%02d-0123456789", i), "client"})
	}
	allocAuth := writeFile(b, dir, "alloc-auth.json", authFile(clients...))
	tokFile := writeFile(b, dir, "alloc.token", secAllocToken+"\n")

	c := startSecuredStores(b, dir, storeAuth)
	plain := startAlloc(b, c, "a1", "", tokFile)
	twin := startAlloc(b, c, "a5", "", tokFile)
	plainNet := startAlloc(b, c, "a2", "", tokFile, "--fast-http=false")
	authd := startAlloc(b, c, "a3", "", tokFile, "--auth-file", allocAuth)
	authd2 := startAlloc(b, c, "a7", "", tokFile, "--auth-file", allocAuth)
	tlsd := startAlloc(b, c, "a4", ca.CertFile, tokFile, "--tls-cert", cert, "--tls-key", key)
	tlsNet := startAlloc(b, c, "a6", ca.CertFile, tokFile, "--tls-cert", cert, "--tls-key", key, "--fast-http=false")

	side := func(name string, p *launch.Proc, extra ...string) secSide {
		url := p.URL()
		if slices.Contains(extra, "-tls-ca") {
			url = "https://" + p.HTTPAddr
		}
		return secSide{name: name, proc: p, run: func(d, warm, c string) Result {
			args := append([]string{"-target", "alloc-raw", "-url", url, "-tag", "sec", "-count", "1", "-c", c, "-d", d, "-warmup", warm}, extra...)
			return loadgen(b, args...)
		}}
	}
	var (
		tok        = []string{"-token", secClientToken}
		sPlain     = side("plain", plain)
		sPlainTok  = side("plain", plain, tok...)
		sTwinTok   = side("twin", twin, tok...)
		sPlainBare = side("plain-bare", plain)
		sPlainNet  = side("plain-net", plainNet)
		sAuth      = side("auth", authd, tok...)
		sAuth2     = side("auth2", authd2, tok...)
		sTLS       = side("tls", tlsd, "-tls-ca", ca.CertFile)
		sTLSNet    = side("tls-net", tlsNet, "-tls-ca", ca.CertFile)
	)
	b.Run("auth", func(b *testing.B) {
		rs := measureRounds(b, authRounds, sPlainTok, sAuth, sTwinTok, sAuth2, sPlainBare)
		reportLoad(b, merge(rs.res["auth"]))
		b.ReportMetric(merge(rs.res["plain"]).OpsPerSec, "noauth-calls/s")
		reportRatio(b, "x-noauth", meanRounds(rs.res["auth"], rs.res["auth2"]), meanRounds(rs.res["plain"], rs.res["twin"]))
		reportRatio(b, "x-twin", rs.res["twin"], rs.res["plain"])
		reportRatio(b, "x-twin-auth", rs.res["auth2"], rs.res["auth"])
		reportRatio(b, "x-noauth-bare", rs.res["auth"], rs.res["plain-bare"])
		authCPU := (rs.cpuPerCall("auth") + rs.cpuPerCall("auth2")) / 2
		plainCPU := (rs.cpuPerCall("plain") + rs.cpuPerCall("twin")) / 2
		if authCPU > 0 && plainCPU > 0 {
			b.ReportMetric(plainCPU/authCPU, "x-noauth-cpu")
			b.ReportMetric(rs.cpuPerCall("plain")/rs.cpuPerCall("twin"), "x-twin-cpu")
			b.ReportMetric(rs.cpuPerCall("auth")/rs.cpuPerCall("auth2"), "x-twin-auth-cpu")
			b.ReportMetric(authCPU*1e4, "auth-cpu-us/call")
			b.ReportMetric(plainCPU*1e4, "noauth-cpu-us/call")
		}
	})
	b.Run("tls", func(b *testing.B) {
		rs := measureRounds(b, secRounds, sPlain, sTLS, sPlainNet, sTLSNet).res
		reportLoad(b, merge(rs["tls"]))
		b.ReportMetric(merge(rs["plain"]).OpsPerSec, "plain-front-calls/s")
		reportRatio(b, "x-plain-front", rs["tls"], rs["plain"])
		b.ReportMetric(merge(rs["tls-net"]).OpsPerSec, "tls-net-calls/s")
		b.ReportMetric(merge(rs["plain-net"]).OpsPerSec, "plain-net-calls/s")
		reportRatio(b, "x-plain-net", rs["tls-net"], rs["plain-net"])
	})
}

// secSide is one allocsvr of a ratio (proc) and how to load it for d
// (after warm) with c workers.
type secSide struct {
	name string
	proc *launch.Proc
	run  func(d, warm, c string) Result
}

// secRuns is what measureRounds saw: each side's results in round order,
// and the CPU ticks its allocsvr used and the calls it answered over all
// rounds.
type secRuns struct {
	res   map[string][]Result
	ticks map[string]int64
	calls map[string]float64
}

// cpuPerCall is side's CPU ticks per call over all rounds (0 if unknown).
func (r secRuns) cpuPerCall(side string) float64 {
	if r.calls[side] <= 0 {
		return 0
	}
	return float64(r.ticks[side]) / r.calls[side]
}

// measureRounds warms every side (buffers, connections), then runs n
// rounds of them, each round in its own shuffled order, and
// answers each side's results in round order. Errors fail the benchmark.
//
// A side's CPU time is read before and after each run, so it covers the
// run's warm-up too; its calls are counted as the measured rate over the
// whole run (warm-up included), the same for every side.
func measureRounds(b *testing.B, n int, sides ...secSide) secRuns {
	conc := fmt.Sprint(allocConc)
	for _, s := range sides {
		s.run("300ms", "0s", "4")
	}
	warm, err := time.ParseDuration(warmup)
	if err != nil {
		b.Fatal(err)
	}
	runs := secRuns{res: map[string][]Result{}, ticks: map[string]int64{}, calls: map[string]float64{}}
	// A side that always ran after the same other one would carry that
	// one's aftermath (its loadgen's 64 connections closing, a process
	// warm from its own previous run) in every round: rotating the order
	// keeps every side behind the same neighbour, so shuffle it instead.
	rng := rand.New(rand.NewPCG(1, 2))
	order := slices.Clone(sides)
	for range n {
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, s := range order {
			before, err := launch.CPUTicks(s.proc.Pid())
			if err != nil {
				b.Fatal(err)
			}
			r := s.run(roundLoad.String(), warmup, conc)
			after, err := launch.CPUTicks(s.proc.Pid())
			if err != nil {
				b.Fatal(err)
			}
			runs.res[s.name] = append(runs.res[s.name], r)
			runs.ticks[s.name] += after - before
			runs.calls[s.name] += r.OpsPerSec * (r.Seconds + warm.Seconds())
		}
	}
	for _, s := range sides {
		if r := merge(runs.res[s.name]); r.Errors > 0 {
			b.Errorf("%s: %d errors, first: %s", s.name, r.Errors, r.FirstError)
		}
	}
	return runs
}

// roundRatios is num's calls/s over den's, round by round.
func roundRatios(num, den []Result) []float64 {
	out := make([]float64, 0, len(num))
	for i := range min(len(num), len(den)) {
		if den[i].OpsPerSec > 0 {
			out = append(out, num[i].OpsPerSec/den[i].OpsPerSec)
		}
	}
	return out
}

// meanRounds is, round by round, a result whose calls/s is the mean of
// a's and b's.
func meanRounds(a, b []Result) []Result {
	out := make([]Result, min(len(a), len(b)))
	for i := range out {
		out[i].OpsPerSec = (a[i].OpsPerSec + b[i].OpsPerSec) / 2
	}
	return out
}

// reportRatio reports, over the rounds' num/den ratios, their geometric
// mean as unit with its 95% confidence interval (unit-lo, unit-hi: the
// mean of the logarithms ± t·s/√n, Student's t), their median as
// unit-med, and logs them all. The interval is what says whether a target
// is shown: its low end above the target's line.
func reportRatio(b *testing.B, unit string, num, den []Result) {
	rs := roundRatios(num, den)
	if len(rs) < 2 {
		b.Errorf("%s: %d rounds", unit, len(rs))
		return
	}
	vals := make([]string, len(rs))
	for i, r := range rs {
		vals[i] = fmt.Sprintf("%.3f", r)
	}
	b.Logf("%s by round: %s", unit, strings.Join(vals, " "))
	st := ratioStats(rs)
	b.ReportMetric(st.geo, unit)
	b.ReportMetric(st.lo, unit+"-lo")
	b.ReportMetric(st.hi, unit+"-hi")
	b.ReportMetric(st.med, unit+"-med")
}

// stats summarises ratios: geometric mean, its 95% interval, median.
type stats struct{ geo, lo, hi, med float64 }

func ratioStats(rs []float64) stats {
	n := float64(len(rs))
	var sum, sq float64
	for _, r := range rs {
		sum += math.Log(r)
	}
	mean := sum / n
	for _, r := range rs {
		d := math.Log(r) - mean
		sq += d * d
	}
	half := tQuantile95(len(rs)-1) * math.Sqrt(sq/(n-1)/n)
	sorted := slices.Sorted(slices.Values(rs))
	med := sorted[len(sorted)/2]
	if len(sorted)%2 == 0 {
		med = (sorted[len(sorted)/2-1] + sorted[len(sorted)/2]) / 2
	}
	return stats{geo: math.Exp(mean), lo: math.Exp(mean - half), hi: math.Exp(mean + half), med: med}
}

// tQuantile95 is Student's t for a two-sided 95% interval with df degrees
// of freedom (df >= 1).
func tQuantile95(df int) float64 {
	table := [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
		2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}
	switch {
	case df < 1:
		return math.Inf(1)
	case df <= len(table):
		return table[df-1]
	// Between the table's rows, the row below: a slightly wider interval.
	case df <= 40:
		return 2.042
	case df <= 60:
		return 2.021
	case df <= 120:
		return 2.000
	}
	return 1.980
}

type authEntry struct{ name, token, role string }

// authFile is the text of an auth file listing es.
func authFile(es ...authEntry) string {
	var entries []string
	for _, e := range es {
		entries = append(entries, fmt.Sprintf(`{"name": %q, "token": %q, "roles": [%q]}`, e.name, e.token, e.role))
	}
	return "[" + strings.Join(entries, ",") + "]"
}

func writeFile(tb testing.TB, dir, name, body string) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// startSecuredStores starts 3 storesvrs with --auth-file and creates the
// tag "sec" with the admin token. launch.Launch is not used: its leader
// probe carries no token.
func startSecuredStores(tb testing.TB, dir, authPath string) *launch.Cluster {
	tb.Helper()
	c, err := launch.New(launch.Options{
		BinDir: bins(tb), Dir: dir, Stores: 3,
		StoreArgs: []string{"--auth-file", authPath, "--join-token-file", writeFile(tb, dir, "admin.token", secAdminToken+"\n")},
		Logf:      func(string, ...any) {},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, s := range c.Stores {
		if err := s.Start(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	for _, s := range c.Stores {
		if err := c.WaitReady(ctx, s); err != nil { // /readyz needs no token
			tb.Fatal(err)
		}
	}
	cli := seqsvrv1connect.NewStoreServiceClient(&http.Client{Timeout: 2 * time.Second}, c.Stores[0].URL())
	for {
		req := connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "sec", Step: 100000})
		req.Header().Set("Authorization", "Bearer "+secAdminToken)
		_, err := cli.CreateTag(ctx, req)
		if err == nil || connect.CodeOf(err) == connect.CodeAlreadyExists {
			return c
		}
		if connect.CodeOf(err) == connect.CodeUnauthenticated || connect.CodeOf(err) == connect.CodePermissionDenied || ctx.Err() != nil {
			tb.Fatalf("create tag: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startAlloc starts an allocsvr on c's stores with the store token and
// args, waits until it is ready and answers it. With caFile it serves
// HTTPS (args hold --tls-cert/--tls-key) and is probed through a client
// trusting caFile.
func startAlloc(tb testing.TB, c *launch.Cluster, name, caFile, tokFile string, args ...string) *launch.Proc {
	tb.Helper()
	p, err := c.NewAlloc(name, name)
	if err != nil {
		tb.Fatal(err)
	}
	p.ExtraArgs = append(p.ExtraArgs, append([]string{"--max-step", "1000000", "--store-token-file", tokFile}, args...)...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	if caFile == "" {
		if err := c.WaitReady(ctx, p); err != nil {
			tb.Fatal(err)
		}
		return p
	}
	cfg, err := tlsconf.Client(caFile, nil)
	if err != nil {
		tb.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: cfg}, Timeout: time.Second}
	url := "https://" + p.HTTPAddr
	for {
		resp, err := hc.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		if !p.Running() || ctx.Err() != nil {
			tb.Fatalf("%s not ready over TLS (last: %v); log: %s", name, err, p.LogPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
