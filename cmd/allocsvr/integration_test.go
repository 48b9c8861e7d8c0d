package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// Short leases keep the snowflake tests fast: the store's lease is 3 s, the
// allocsvr renews every 300 ms and fences 1 s before an unrenewed lease
// would expire.
var (
	leaseTTL       = 3 * time.Second
	storeLeaseArgs = []string{"--worker-lease-ttl", leaseTTL.String()}
	allocLeaseArgs = []string{"--snowflake-renew-interval", "300ms", "--snowflake-fence-margin", "1s"}
)

func createTag(t *testing.T, c *launch.Cluster, tag string, step int64) {
	t.Helper()
	if err := c.CreateTag(launchtest.Context(t, 30*time.Second), &seqsvrv1.CreateTagRequest{Tag: tag, Step: step}); err != nil {
		t.Fatal(err)
	}
}

func nextIDs(ctx context.Context, c seqsvrv1connect.AllocServiceClient, tag string, n int32) ([]int64, error) {
	res, err := c.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: tag, Count: n}))
	if err != nil {
		return nil, err
	}
	return res.Msg.GetIds(), nil
}

func snowIDs(ctx context.Context, c seqsvrv1connect.AllocServiceClient, n int32) ([]int64, error) {
	res, err := c.NextSnowflakeIDs(ctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{Count: n}))
	if err != nil {
		return nil, err
	}
	return res.Msg.GetIds(), nil
}

// waitSnowflake polls until p serves snowflake IDs.
func waitSnowflake(t *testing.T, c *launch.Cluster, p *launch.Proc) []int64 {
	t.Helper()
	ctx := launchtest.Context(t, 30*time.Second)
	for {
		ids, err := snowIDs(ctx, c.AllocClient(p), 1)
		if err == nil {
			return ids
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never served snowflake IDs: %v", p.Name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func workerOf(t *testing.T, c *launch.Cluster, p *launch.Proc, id int64) int64 {
	t.Helper()
	res, err := c.AllocClient(p).DecodeSnowflake(launchtest.Context(t, 5*time.Second), connect.NewRequest(&seqsvrv1.DecodeSnowflakeRequest{Id: id}))
	if err != nil {
		t.Fatalf("decode %d: %v", id, err)
	}
	return res.Msg.GetWorkerId()
}

// uniq records IDs and fails on a repeat.
type uniq struct {
	mu   sync.Mutex
	seen map[int64]string
}

func (u *uniq) add(t *testing.T, who string, ids []int64) {
	t.Helper()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.seen == nil {
		u.seen = map[int64]string{}
	}
	for _, id := range ids {
		if prev, dup := u.seen[id]; dup {
			t.Errorf("ID %d handed out twice: to %s and %s", id, prev, who)
		}
		u.seen[id] = who
	}
}

// Two allocsvrs, three storesvrs, clients on both while the store leader is
// SIGKILLed and restarted: every ID unique, each client's IDs strictly
// increasing, and no error at all since the buffers outlast the failover.
func TestStoreLeaderKillTwoAllocsvrs(t *testing.T) {
	c := launchtest.StartCluster(t, 3, 2, nil, nil)
	createTag(t, c, "ord", 5000)
	ctx := launchtest.Context(t, 60*time.Second)

	var (
		ids   uniq
		wg    sync.WaitGroup
		stop  = make(chan struct{})
		mu    sync.Mutex
		errs  []error
		calls = make([]int, 6) // successful NextIDs per client
	)
	for i := range 6 {
		a := c.Allocs[i%2]
		client := c.AllocClient(a)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last int64
			who := fmt.Sprintf("%s/client%d", a.Name, i)
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
				got, err := nextIDs(context.Background(), client, "ord", int32(1+rand.IntN(5)))
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", who, err))
					mu.Unlock()
					continue
				}
				for _, id := range got {
					if id <= last {
						t.Errorf("%s: ID %d after %d: not strictly increasing", who, id, last)
					}
					last = id
				}
				ids.add(t, who, got)
				mu.Lock()
				calls[i]++
				mu.Unlock()
			}
		}()
	}
	// waitCalls waits until every client has n more successful calls than
	// it had when waitCalls was called.
	waitCalls := func(n int, what string) {
		t.Helper()
		mu.Lock()
		from := slices.Clone(calls)
		mu.Unlock()
		poll.UntilCtx(ctx, t, what, func() bool {
			mu.Lock()
			defer mu.Unlock()
			for i := range calls {
				if calls[i] < from[i]+n {
					return false
				}
			}
			return true
		})
	}
	waitCalls(20, "traffic before the fault")
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("SIGKILL store leader %s", leader.Name)
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leader(ctx); err != nil {
		t.Fatal(err)
	}
	waitCalls(20, "traffic under the new leader")
	if err := leader.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, leader); err != nil {
		t.Fatal(err)
	}
	waitCalls(20, "traffic with the old leader back")
	close(stop)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d errors while buffers lasted, first: %v", len(errs), errs[0])
	}
	t.Logf("%d unique IDs served by 2 allocsvrs", len(ids.seen))
}

// The whole store is killed: the allocsvr keeps serving from its buffers,
// then answers unavailable promptly; its snowflake IDs stop within the lease
// TTL (failed_precondition); after the store restarts both recover.
func TestWholeStoreDownThenRecover(t *testing.T) {
	allocArgs := append([]string{"--max-step", "100", "--empty-wait", "200ms", "--load-timeout", "1s"}, allocLeaseArgs...)
	c := launchtest.StartCluster(t, 3, 1, storeLeaseArgs, allocArgs)
	createTag(t, c, "t", 100)
	a := c.Allocs[0]
	ac := c.AllocClient(a)
	ctx := launchtest.Context(t, 90*time.Second)
	var segIDs, sfIDs uniq
	var last int64
	take := func(got []int64) {
		for _, id := range got {
			if id <= last {
				t.Fatalf("ID %d after %d", id, last)
			}
			last = id
		}
		segIDs.add(t, a.Name, got)
	}
	got, err := nextIDs(ctx, ac, "t", 5)
	if err != nil {
		t.Fatal(err)
	}
	take(got)
	sfIDs.add(t, a.Name, waitSnowflake(t, c, a))

	for _, s := range c.Stores {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	killed := time.Now()

	// Snowflake: served until the lease can no longer be trusted, then
	// failed_precondition, within the lease TTL of the last renewal.
	for {
		ids, err := snowIDs(ctx, ac, 1)
		if err != nil {
			if code := connect.CodeOf(err); code != connect.CodeFailedPrecondition {
				t.Fatalf("snowflake after store loss: %v, want failed_precondition", err)
			}
			break
		}
		sfIDs.add(t, a.Name, ids)
		if time.Since(killed) > leaseTTL {
			t.Fatalf("snowflake IDs still served %v after the store died (lease TTL %v)", time.Since(killed), leaseTTL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("snowflake fenced %v after the store died", time.Since(killed).Round(time.Millisecond))

	// Segments: the buffers (at most two segments of 100) drain, then
	// unavailable, promptly each time.
	servedAfter, unavailable := 0, 0
	for i := 0; i < 260 && unavailable < 3; i++ {
		start := time.Now()
		got, err := nextIDs(ctx, ac, "t", 1)
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("NextIDs took %v with the store down; must answer promptly", d)
		}
		switch {
		case err == nil:
			if unavailable > 0 {
				t.Fatalf("served an ID after answering unavailable with the store still down")
			}
			take(got)
			servedAfter++
		case connect.CodeOf(err) == connect.CodeUnavailable:
			unavailable++
		default:
			t.Fatalf("with the store down: %v, want unavailable", err)
		}
	}
	if unavailable == 0 || servedAfter == 0 || servedAfter > 200 {
		t.Fatalf("served %d IDs from buffers then %d unavailable; want some of each, at most 200 served", servedAfter, unavailable)
	}
	t.Logf("served %d IDs from buffers after the store died, then unavailable", servedAfter)

	for _, s := range c.Stores {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for {
		got, err := nextIDs(ctx, ac, "t", 3)
		if err == nil {
			take(got)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("segment IDs did not recover after the store restarted: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	sfIDs.add(t, a.Name, waitSnowflake(t, c, a))
}

// One test calls NextIDs over every protocol the port speaks, plus Leaf's
// plain-number API; IDs keep increasing across all of them. It runs with
// the HTTP/1.1 front and without (--fast-http=false): the answers are the
// same.
func TestEveryProtocolAndLeafAPI(t *testing.T) {
	launchtest.EachFastHTTP(t, testEveryProtocolAndLeafAPI)
}

func testEveryProtocolAndLeafAPI(t *testing.T, flags []string) {
	c := launchtest.StartCluster(t, 3, 1, flags, flags)
	createTag(t, c, "proto", 1000)
	a := c.Allocs[0]
	ctx := launchtest.Context(t, 30*time.Second)
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &p}}
	h1 := &http.Client{}
	clients := []struct {
		name string
		c    seqsvrv1connect.AllocServiceClient
	}{
		{"connect+json", seqsvrv1connect.NewAllocServiceClient(h1, a.URL(), connect.WithProtoJSON())},
		{"connect+proto", seqsvrv1connect.NewAllocServiceClient(h1, a.URL())},
		{"connect+proto over h2c", seqsvrv1connect.NewAllocServiceClient(h2c, a.URL())},
		{"grpc", seqsvrv1connect.NewAllocServiceClient(h2c, a.URL(), connect.WithGRPC())},
		{"grpc-web", seqsvrv1connect.NewAllocServiceClient(h1, a.URL(), connect.WithGRPCWeb())},
		{"grpc-web+json", seqsvrv1connect.NewAllocServiceClient(h1, a.URL(), connect.WithGRPCWeb(), connect.WithProtoJSON())},
	}
	var last int64
	for _, cl := range clients {
		ids, err := nextIDs(ctx, cl.c, "proto", 3)
		if err != nil || len(ids) != 3 {
			t.Fatalf("%s: %v %v", cl.name, ids, err)
		}
		for _, id := range ids {
			if id <= last {
				t.Fatalf("%s: ID %d after %d", cl.name, id, last)
			}
			last = id
		}
		// Errors keep their code over every protocol.
		_, err = nextIDs(ctx, cl.c, "proto", -1)
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("%s: count -1 answered %v", cl.name, err)
		}
	}
	// A client whose connections carry only binary NextIDs calls is served
	// by the HTTP/1.1 front when it is on; /metrics counts those answers.
	plain := seqsvrv1connect.NewAllocServiceClient(&http.Client{Transport: &http.Transport{}}, a.URL())
	for i := 0; i < 5; i++ {
		ids, err := nextIDs(ctx, plain, "proto", 2)
		if err != nil || len(ids) != 2 || ids[0] <= last {
			t.Fatalf("plain connect client: %v %v", ids, err)
		}
		last = ids[1]
	}
	launchtest.WantFront(t, a.URL(), flags)
	if n, on := launchtest.Metric(t, a.URL(), "seqsvr_http_fast_requests_total"); on && n < 5 {
		t.Fatalf("seqsvr_http_fast_requests_total = %v after 5 plain calls", n)
	}
	res, err := http.Get(a.URL() + "/api/segment/get/proto")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	id, err := strconv.ParseInt(string(body), 10, 64)
	if res.StatusCode != 200 || err != nil || id <= last {
		t.Fatalf("Leaf API: %d %q, want a plain number above %d", res.StatusCode, body, last)
	}
	for path, want := range map[string]int{"/api/segment/get/unknown-tag": 404, "/api/segment/get/bad%20tag": 400} {
		res, err := http.Get(a.URL() + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != want || strings.Count(strings.TrimSpace(string(b)), "\n") != 0 {
			t.Fatalf("%s: %d %q, want %d and one line", path, res.StatusCode, b, want)
		}
	}
	waitSnowflake(t, c, a)
	res, err = http.Get(a.URL() + "/api/snowflake/get/any")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	if sid, err := strconv.ParseInt(string(body), 10, 64); res.StatusCode != 200 || err != nil || sid <= 0 {
		t.Fatalf("Leaf snowflake API: %d %q", res.StatusCode, body)
	}
	mres, err := http.Get(a.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mb, _ := io.ReadAll(mres.Body)
	mres.Body.Close()
	if !strings.Contains(string(mb), `tag="proto"`) {
		t.Fatalf("/metrics has no per-tag series for proto")
	}
}

// Snowflake worker IDs: two allocsvrs hold distinct ones, a restart keeps
// its own, a twin with the same --node-id never serves the holder's worker
// ID while the holder lives, and all processes stop serving within the
// lease TTL when every store member is frozen (SIGSTOP).
func TestSnowflakeWorkerIDs(t *testing.T) {
	c := launchtest.StartCluster(t, 3, 2, storeLeaseArgs, allocLeaseArgs)
	a1, a2 := c.Allocs[0], c.Allocs[1]
	var all uniq
	id1, id2 := waitSnowflake(t, c, a1), waitSnowflake(t, c, a2)
	all.add(t, a1.Name, id1)
	all.add(t, a2.Name, id2)
	w1, w2 := workerOf(t, c, a1, id1[0]), workerOf(t, c, a2, id2[0])
	if w1 == w2 {
		t.Fatalf("a1 and a2 share worker ID %d", w1)
	}

	ctx := launchtest.Context(t, 90*time.Second)
	if err := a1.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, a1); err != nil {
		t.Fatal(err)
	}
	id1 = waitSnowflake(t, c, a1)
	all.add(t, a1.Name+" restarted", id1)
	if w := workerOf(t, c, a1, id1[0]); w != w1 {
		t.Fatalf("a1 restarted with worker ID %d, had %d", w, w1)
	}

	// A twin: same --node-id as a1, its own port and data dir.
	port, err := launch.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	twin := &launch.Proc{
		Name: "twin", Kind: launch.KindAlloc, NodeID: a1.NodeID,
		HTTPAddr: fmt.Sprintf("127.0.0.1:%d", port),
		DataDir:  filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "twin.log"),
		Binary: filepath.Join(launchtest.BinDir(t), "allocsvr"), Stores: c.StoreURLs(),
		ExtraArgs: allocLeaseArgs,
	}
	t.Cleanup(func() { _ = twin.Kill() })
	if err := twin.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, twin); err != nil {
		t.Fatal(err)
	}
	// While a1 lives the twin serves no snowflake ID at all: the store
	// refuses its registration, and the contract's answer for "the
	// node-id is held by a live process" is failed_precondition (Leaf 412).
	// (unavailable only while the store does not answer the twin at all).
	tc := c.AllocClient(twin)
	held := 0
	for deadline := time.Now().Add(2 * leaseTTL); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ids, err := snowIDs(ctx, tc, 5)
		switch {
		case err == nil:
			t.Fatalf("twin of a live %s served snowflake IDs %v", a1.NodeID, ids)
		case connect.CodeOf(err) == connect.CodeFailedPrecondition && strings.Contains(err.Error(), "held by a live process"):
			held++
		case connect.CodeOf(err) != connect.CodeUnavailable:
			t.Fatalf("twin: %v, want failed_precondition: node-id held by a live process", err)
		}
		ids, err = snowIDs(ctx, c.AllocClient(a1), 5)
		if err != nil {
			t.Fatalf("a1 stopped serving while a twin started: %v", err)
		}
		all.add(t, a1.Name, ids)
	}
	if held == 0 {
		t.Fatal("the twin never answered failed_precondition: node-id held by a live process")
	}
	poll.UntilCtx(ctx, t, "the twin's Leaf snowflake GET answering 412", func() bool {
		res, err := http.Get(twin.URL() + "/api/snowflake/get/x")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		switch {
		case res.StatusCode == http.StatusPreconditionFailed && strings.Contains(string(body), "held by a live process"):
			return true
		case res.StatusCode != http.StatusServiceUnavailable:
			t.Fatalf("twin's Leaf snowflake GET: %d %q, want 412 naming the held node-id", res.StatusCode, body)
		}
		return false
	})
	if err := twin.Kill(); err != nil {
		t.Fatal(err)
	}

	// Freeze every store member: each allocsvr stops within the lease TTL.
	for _, s := range c.Stores {
		if err := s.Pause(); err != nil {
			t.Fatal(err)
		}
	}
	frozen := time.Now()
	for _, a := range []*launch.Proc{a1, a2} {
		for {
			ids, err := snowIDs(ctx, c.AllocClient(a), 1)
			if err != nil {
				if connect.CodeOf(err) != connect.CodeFailedPrecondition {
					t.Fatalf("%s with the store frozen: %v, want failed_precondition", a.Name, err)
				}
				break
			}
			all.add(t, a.Name, ids)
			if time.Since(frozen) > leaseTTL {
				t.Fatalf("%s still serves snowflake IDs %v after the store froze", a.Name, time.Since(frozen))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, s := range c.Stores {
		if err := s.Resume(); err != nil {
			t.Fatal(err)
		}
	}
	all.add(t, a1.Name+" after thaw", waitSnowflake(t, c, a1))
	all.add(t, a2.Name+" after thaw", waitSnowflake(t, c, a2))
}

// An allocsvr whose clock is a minute behind the store leader's refuses to
// start snowflake and exits non-zero with a log line saying why. The skew
// comes from a -tags faults build (SEQSVR_FAULTS_CLOCK_OFFSET_MS).
func TestClockCheckFailureExits(t *testing.T) {
	c := launchtest.StartCluster(t, 3, 0, nil, nil)
	ctx := launchtest.Context(t, 120*time.Second)
	faultsBin := t.TempDir()
	if err := launch.Build(ctx, faultsBin, "faults"); err != nil {
		t.Fatal(err)
	}
	port, err := launch.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	skewed := &launch.Proc{
		Name: "skewed", Kind: launch.KindAlloc, NodeID: "skewed",
		HTTPAddr: fmt.Sprintf("127.0.0.1:%d", port),
		DataDir:  filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "skewed.log"),
		Binary: filepath.Join(faultsBin, "allocsvr"), Stores: c.StoreURLs(),
		Env: []string{"SEQSVR_FAULTS_CLOCK_OFFSET_MS=-60000"},
	}
	t.Cleanup(func() { _ = skewed.Kill() })
	if err := skewed.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for skewed.Running() {
		if ctx.Err() != nil {
			t.Fatal("allocsvr with a clock 60 s behind kept running")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if skewed.ExitErr() == nil {
		t.Fatal("allocsvr with a bad clock exited 0")
	}
	b, err := os.ReadFile(skewed.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "clock check failed") {
		t.Fatalf("no clear log line about the clock:\n%s", b)
	}
}
