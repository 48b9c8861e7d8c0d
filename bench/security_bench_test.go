package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
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

// BenchmarkSecurity is the cost of access control and of TLS per call
// (issue 11): NextIDs count=1 from loadgen's raw HTTP/1.1 client, 64
// workers on kept-alive connections, against allocsvrs that differ in one
// setting each, all on the same 3 storesvrs (which check tokens: the
// allocsvrs present theirs with --store-token-file). Each ratio alternates
// short runs of its sides (see rounds), so a change in the shared box's
// load moves them alike.
//
//   - auth: --auth-file vs the same allocsvr without it, both with the
//     HTTP/1.1 front (which checks tokens itself). x-noauth = auth / no
//     auth (target: >= 1/1.05, at most 5% more time per call). x-twin is
//     a second allocsvr identical to the no-auth one, measured in the same
//     rounds: how far from 1 a ratio lands when nothing differs, the noise
//     to read x-noauth against.
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

	conc := fmt.Sprint(allocConc)
	nextIDs := func(url string, extra ...string) func(d, warm string, c string) Result {
		return func(d, warm, c string) Result {
			args := append([]string{"-target", "alloc-raw", "-url", url, "-tag", "sec", "-count", "1", "-c", c, "-d", d, "-warmup", warm}, extra...)
			return loadgen(b, args...)
		}
	}
	type side struct {
		name string
		run  func(d, warm, c string) Result
	}
	var (
		sPlain    = side{"plain", nextIDs(plain)}
		sTwin     = side{"twin", nextIDs(twin)}
		sPlainNet = side{"plain-net", nextIDs(plainNet)}
		sAuth     = side{"auth", nextIDs(authd, "-token", secClientToken)}
		sTLS      = side{"tls", nextIDs(tlsd, "-tls-ca", ca.CertFile)}
		sTLSNet   = side{"tls-net", nextIDs(tlsNet, "-tls-ca", ca.CertFile)}
	)
	// measure warms every side (buffers, connections), then runs rounds
	// of them in turn, each round starting one side further on so no side
	// always runs right after the same other one, and answers each
	// side's merged result.
	measure := func(b *testing.B, sides ...side) map[string]Result {
		runs := map[string][]Result{}
		for _, s := range sides {
			s.run("300ms", "0s", "4")
		}
		for i := range rounds {
			for j := range sides {
				s := sides[(i+j)%len(sides)]
				runs[s.name] = append(runs[s.name], s.run(roundLoad.String(), warmup, conc))
			}
		}
		out := map[string]Result{}
		for _, s := range sides {
			r := merge(runs[s.name])
			if r.Errors > 0 {
				b.Errorf("%s: %d errors, first: %s", s.name, r.Errors, r.FirstError)
			}
			out[s.name] = r
		}
		return out
	}

	b.Run("auth", func(b *testing.B) {
		rs := measure(b, sPlain, sAuth, sTwin)
		reportLoad(b, rs["auth"])
		b.ReportMetric(rs["plain"].OpsPerSec, "noauth-calls/s")
		b.ReportMetric(rs["auth"].OpsPerSec/rs["plain"].OpsPerSec, "x-noauth")
		b.ReportMetric(rs["twin"].OpsPerSec/rs["plain"].OpsPerSec, "x-twin")
	})
	b.Run("tls", func(b *testing.B) {
		rs := measure(b, sPlain, sTLS, sPlainNet, sTLSNet)
		reportLoad(b, rs["tls"])
		b.ReportMetric(rs["plain"].OpsPerSec, "plain-front-calls/s")
		b.ReportMetric(rs["tls"].OpsPerSec/rs["plain"].OpsPerSec, "x-plain-front")
		b.ReportMetric(rs["tls-net"].OpsPerSec, "tls-net-calls/s")
		b.ReportMetric(rs["plain-net"].OpsPerSec, "plain-net-calls/s")
		b.ReportMetric(rs["tls-net"].OpsPerSec/rs["plain-net"].OpsPerSec, "x-plain-net")
	})
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
