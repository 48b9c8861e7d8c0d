package bench

import (
	"context"
	"fmt"
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
	"github.com/seqsvr/seqsvr/internal/cluster"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

const (
	secClientToken = "bench-client-token-0123456789"
	secAllocToken  = "bench-alloc-token-0123456789"
	secAdminToken  = "bench-admin-token-0123456789"
)

// secRounds is how many rounds BenchmarkSecurity runs of each ratio's
// sides. A single round's ratio on the shared 2-core box lands anywhere in
// about ±15% even between two identical processes, three times the auth
// target's margin; the median of many short interleaved rounds, each
// paired with its own reference, moves far less. Odd, so the median is
// one round's.
const secRounds = 9

// BenchmarkSecurity is the cost of access control and of TLS per call
// (issue 11): NextIDs count=1 from loadgen's raw HTTP/1.1 client, 64
// workers on kept-alive connections, against allocsvrs that differ in one
// setting each, all on the same 3 storesvrs (which check tokens: the
// allocsvrs present theirs with --store-token-file).
//
// Each ratio runs secRounds rounds; a round runs every side once for
// roundLoad, starting one side further on each time (so no side always
// follows the same one), and yields one ratio per pair from that round's
// runs alone. A ratio is reported as the median over the rounds (x-NAME)
// with its spread (x-NAME-min, x-NAME-max), and every round's value is
// logged. Calls/s and latencies are of all rounds merged.
//
//   - auth: --auth-file vs the same allocsvr without it, both with the
//     HTTP/1.1 front (which checks tokens itself). Two no-auth allocsvrs
//     run, plain and twin, identical. x-noauth = auth / the mean of plain
//     and twin in the same round (target: >= 1/1.05, at most 5% more time
//     per call). x-twin = twin / plain: how far from 1 a ratio lands when
//     nothing differs, the noise to read x-noauth against (a little
//     wider than x-noauth's, whose reference is two processes, not one).
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
	tlsd := startAlloc(b, c, "a4", ca.CertFile, tokFile, "--tls-cert", cert, "--tls-key", key)
	tlsNet := startAlloc(b, c, "a6", ca.CertFile, tokFile, "--tls-cert", cert, "--tls-key", key, "--fast-http=false")

	nextIDs := func(url string, extra ...string) func(d, warm string, c string) Result {
		return func(d, warm, c string) Result {
			args := append([]string{"-target", "alloc-raw", "-url", url, "-tag", "sec", "-count", "1", "-c", c, "-d", d, "-warmup", warm}, extra...)
			return loadgen(b, args...)
		}
	}
	var (
		sPlain    = secSide{"plain", nextIDs(plain)}
		sTwin     = secSide{"twin", nextIDs(twin)}
		sPlainNet = secSide{"plain-net", nextIDs(plainNet)}
		sAuth     = secSide{"auth", nextIDs(authd, "-token", secClientToken)}
		sTLS      = secSide{"tls", nextIDs(tlsd, "-tls-ca", ca.CertFile)}
		sTLSNet   = secSide{"tls-net", nextIDs(tlsNet, "-tls-ca", ca.CertFile)}
	)
	b.Run("auth", func(b *testing.B) {
		rs := measureRounds(b, secRounds, sPlain, sAuth, sTwin)
		reportLoad(b, merge(rs["auth"]))
		b.ReportMetric(merge(rs["plain"]).OpsPerSec, "noauth-calls/s")
		// Two identical processes differ by up to 10% over a whole
		// iteration (x-twin's median), so the reference is both of them:
		// each round's mean of plain and twin.
		reportRatio(b, "x-noauth", rs["auth"], meanRounds(rs["plain"], rs["twin"]))
		reportRatio(b, "x-twin", rs["twin"], rs["plain"])
	})
	b.Run("tls", func(b *testing.B) {
		rs := measureRounds(b, secRounds, sPlain, sTLS, sPlainNet, sTLSNet)
		reportLoad(b, merge(rs["tls"]))
		b.ReportMetric(merge(rs["plain"]).OpsPerSec, "plain-front-calls/s")
		reportRatio(b, "x-plain-front", rs["tls"], rs["plain"])
		b.ReportMetric(merge(rs["tls-net"]).OpsPerSec, "tls-net-calls/s")
		b.ReportMetric(merge(rs["plain-net"]).OpsPerSec, "plain-net-calls/s")
		reportRatio(b, "x-plain-net", rs["tls-net"], rs["plain-net"])
	})
}

// secSide is one allocsvr of a ratio and how to load it for d (after
// warm) with c workers.
type secSide struct {
	name string
	run  func(d, warm, c string) Result
}

// measureRounds warms every side (buffers, connections), then runs n
// rounds of them in turn, each round starting one side further on, and
// answers each side's results in round order. Errors fail the benchmark.
func measureRounds(b *testing.B, n int, sides ...secSide) map[string][]Result {
	conc := fmt.Sprint(allocConc)
	for _, s := range sides {
		s.run("300ms", "0s", "4")
	}
	runs := map[string][]Result{}
	for i := range n {
		for j := range sides {
			s := sides[(i+j)%len(sides)]
			runs[s.name] = append(runs[s.name], s.run(roundLoad.String(), warmup, conc))
		}
	}
	for _, s := range sides {
		if r := merge(runs[s.name]); r.Errors > 0 {
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

// reportRatio reports the median of the rounds' num/den ratios as unit,
// their lowest and highest as unit-min and unit-max, and logs them all.
func reportRatio(b *testing.B, unit string, num, den []Result) {
	rs := roundRatios(num, den)
	if len(rs) == 0 {
		b.Errorf("%s: no rounds", unit)
		return
	}
	vals := make([]string, len(rs))
	for i, r := range rs {
		vals[i] = fmt.Sprintf("%.3f", r)
	}
	b.Logf("%s by round: %s", unit, strings.Join(vals, " "))
	sorted := slices.Sorted(slices.Values(rs))
	b.ReportMetric(sorted[len(sorted)/2], unit)
	b.ReportMetric(sorted[0], unit+"-min")
	b.ReportMetric(sorted[len(sorted)-1], unit+"-max")
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
// tag "sec" with the admin token. cluster.Launch is not used: its leader
// probe carries no token.
func startSecuredStores(tb testing.TB, dir, authPath string) *cluster.Cluster {
	tb.Helper()
	c, err := cluster.New(cluster.Options{
		BinDir: bins(tb), Dir: dir, Stores: 3,
		StoreArgs: []string{"--auth-file", authPath},
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
// args, waits until it is ready and answers its base URL. With caFile it
// serves HTTPS (args hold --tls-cert/--tls-key) and is probed through a
// client trusting caFile.
func startAlloc(tb testing.TB, c *cluster.Cluster, name, caFile, tokFile string, args ...string) string {
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
		return p.URL()
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
				return url
			}
		}
		if !p.Running() || ctx.Err() != nil {
			tb.Fatalf("%s not ready over TLS (last: %v); log: %s", name, err, p.LogPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
