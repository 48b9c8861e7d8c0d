package client_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/client"
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// The real-process tests, the examples and the benchmarks share one
// secure cluster (3 storesvrs, 2 allocsvrs, tokens and TLS on), started
// once by TestMain; a test that kills a process starts it again before it
// ends. Under -short nothing is started and only the unit tests run.
var (
	shared    *launch.Cluster
	allocURLs []string // the allocsvrs' https:// base URLs
	token     string   // a token with role client
	caFile    string   // the CA the servers' certificates chain to
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		// Examples need the cluster: keep them out of the unit tier.
		if f := flag.Lookup("test.run"); f != nil && f.Value.String() == "" {
			_ = flag.Set("test.run", "^Test")
		}
		os.Exit(m.Run())
	}
	code, err := runWithCluster(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "client tests:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runWithCluster(m *testing.M) (int, error) {
	bin, err := launchtest.Bins()
	if err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp("", "seqsvr-client-test-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	sec, err := launch.NewSecurity(dir + "/sec")
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := launch.Start(ctx, launch.Options{
		BinDir: bin, Dir: dir, Stores: 3, Allocs: 2, Security: sec,
		Logf: func(string, ...any) {},
		// Sections of a dead allocsvr move after the lease: keep it short.
		StoreArgs: []string{"--seq-lease-ttl", "2s"},
	})
	if err != nil {
		return 0, err
	}
	shared, token, caFile = c, sec.ClientToken, sec.CAFile
	for _, a := range c.Allocs {
		allocURLs = append(allocURLs, a.URL())
	}
	for _, tag := range []string{"example-order", "example-buffered"} {
		if err := c.CreateTag(ctx, &seqsvrv1.CreateTagRequest{Tag: tag}); err != nil {
			return 0, err
		}
	}
	if err := c.CreateSpace(ctx, &seqsvrv1.CreateSpaceRequest{Space: "example-inbox", KeyCount: 1000, SectionSize: 100}); err != nil {
		return 0, err
	}
	// The allocsvrs learn a new space with their next heartbeat.
	probe, err := client.New(allocURLs, client.WithToken(token), client.WithCAFile(caFile))
	if err != nil {
		return 0, err
	}
	for {
		_, err := probe.CurrentSeqs(ctx, "example-inbox", []uint64{0, 100, 200, 300, 400, 500, 600, 700, 800, 900})
		if err == nil {
			break
		}
		if client.Code(err) != connect.CodeNotFound {
			return 0, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	probe.Close()
	code := launchtest.Main(m)
	if code != 0 {
		for _, p := range c.All() {
			if b, err := os.ReadFile(p.LogPath); err == nil {
				s := string(b)
				fmt.Fprintf(os.Stderr, "---- %s log (tail) ----\n%s\n", p.Name, s[max(0, len(s)-3000):])
			}
		}
	}
	c.Close()
	return code, nil
}

// sharedCluster is the shared cluster for a real-process test; it skips
// under -short. The tests using it must not call t.Parallel: some kill
// processes.
func sharedCluster(t testing.TB) *launch.Cluster {
	t.Helper()
	if testing.Short() || shared == nil {
		t.Skip("-short: real-process test")
	}
	return shared
}

// newClient is a client of the shared cluster's allocsvrs with the
// client token and the cluster's CA, closed when the test ends.
func newClient(t testing.TB, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(allocURLs, append([]client.Option{client.WithToken(token), client.WithCAFile(caFile)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// createTag makes a fresh tag for one test.
func createTag(t testing.TB, c *launch.Cluster, tag string, step int64) {
	t.Helper()
	launchtest.CreateTag(t, c, tag, step)
}

// restart starts p again (after a kill) and waits for its /readyz.
func restart(t testing.TB, c *launch.Cluster, p *launch.Proc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, p); err != nil {
		t.Fatal(err)
	}
}

// countCalls counts the RPCs a client sends, by procedure.
type countCalls struct {
	mu sync.Mutex
	n  map[string]int
}

func (cc *countCalls) get(proc string) int {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.n[proc]
}

func (cc *countCalls) interceptor() connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			cc.mu.Lock()
			if cc.n == nil {
				cc.n = map[string]int{}
			}
			cc.n[req.Spec().Procedure]++
			cc.mu.Unlock()
			return next(ctx, req)
		}
	})
}
