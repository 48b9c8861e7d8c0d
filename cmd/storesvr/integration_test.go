package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

func createTag(t *testing.T, c *launch.Cluster, p *launch.Proc, tag string, step int64) {
	t.Helper()
	_, err := c.StoreClient(p).CreateTag(launchtest.Context(t, 10*time.Second), connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: tag, Step: step}))
	if err != nil {
		t.Fatalf("CreateTag %s: %v", tag, err)
	}
}

// threeStores starts three storesvrs with flags, waits for a leader and
// picks a store that is not it. ctx ends after d.
func threeStores(t *testing.T, flags []string, d time.Duration) (c *launch.Cluster, ctx context.Context, leader, follower *launch.Proc) {
	t.Helper()
	c = launchtest.StartCluster(t, 3, 0, flags, nil)
	ctx = launchtest.Context(t, d)
	leader, follower = leaderAndFollower(ctx, t, c)
	return c, ctx, leader, follower
}

// leaderAndFollower waits for the leader and picks a store that is not it.
func leaderAndFollower(ctx context.Context, t *testing.T, c *launch.Cluster) (leader, follower *launch.Proc) {
	t.Helper()
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Stores {
		if s != leader {
			follower = s
		}
	}
	return leader, follower
}

// maxID reads max_id through the current leader (a linearizable read).
func maxID(t *testing.T, c *launch.Cluster, tag string) int64 {
	t.Helper()
	ctx := launchtest.Context(t, 20*time.Second)
	for {
		l, err := c.Leader(ctx)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.StoreClient(l).GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: tag}))
		if err == nil {
			return res.Msg.GetMaxId()
		}
		if ctx.Err() != nil {
			t.Fatalf("GetTag %s: %v", tag, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkNoOverlap fails when two acknowledged segments share an ID.
func checkNoOverlap(t *testing.T, segs []*seqsvrv1.Segment) {
	t.Helper()
	sort.Slice(segs, func(i, j int) bool { return segs[i].GetFirst() < segs[j].GetFirst() })
	for i, s := range segs {
		if s.GetFirst() > s.GetLast() {
			t.Fatalf("empty segment %v", s)
		}
		if i > 0 && s.GetFirst() <= segs[i-1].GetLast() {
			t.Fatalf("segments overlap: %v and %v", segs[i-1], s)
		}
	}
}

// SIGKILL the leader while 8 clients reserve through every member: no two
// acknowledged segments overlap, max_id covers all of them afterwards, and
// reservations go on after the kill. Then the whole cluster is killed and
// restarted from disk: max_id is kept.
func TestLeaderKillDuringReservationsAndRestartFromDisk(t *testing.T) {
	c := launchtest.StartCluster(t, 3, 0, nil, nil)
	ctx := launchtest.Context(t, 90*time.Second)
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	createTag(t, c, leader, "kill", 10)

	var (
		mu        sync.Mutex
		acked     []*seqsvrv1.Segment
		afterKill atomic.Int64
		killed    atomic.Bool
		stop      = make(chan struct{})
		wg        sync.WaitGroup
	)
	clients := make([]seqsvrv1connect.StoreServiceClient, len(c.Stores))
	httpc := &http.Client{Timeout: 3 * time.Second}
	for i, s := range c.Stores {
		clients[i] = seqsvrv1connect.NewStoreServiceClient(httpc, s.URL())
	}
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				// One request_id per reservation, kept across retries, so
				// a retry after an ambiguous failure cannot burn a second
				// segment.
				req := &seqsvrv1.ReserveSegmentRequest{Tag: "kill", RequestId: fmt.Sprintf("w%d-%d", w, n)}
				for attempt := 0; ; attempt++ {
					cl := clients[rand.IntN(len(clients))]
					res, err := cl.ReserveSegment(context.Background(), connect.NewRequest(req))
					if err == nil {
						mu.Lock()
						acked = append(acked, res.Msg)
						mu.Unlock()
						if killed.Load() {
							afterKill.Add(1)
						}
						break
					}
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
		}()
	}

	poll.UntilCtx(ctx, t, "200 reservations acknowledged", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(acked) >= 200
	})
	t.Logf("killing leader %s", leader.Name)
	if err := leader.Kill(); err != nil {
		t.Fatal(err)
	}
	killed.Store(true)
	poll.UntilCtx(ctx, t, "200 reservations acknowledged after the leader kill", func() bool {
		return afterKill.Load() >= 200
	})
	if err := leader.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, leader); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()

	checkNoOverlap(t, acked)
	var top int64
	for _, s := range acked {
		top = max(top, s.GetLast())
	}
	got := maxID(t, c, "kill")
	if got < top {
		t.Fatalf("max_id %d below acknowledged segment end %d", got, top)
	}
	t.Logf("%d segments acknowledged (%d after the kill), max_id %d", len(acked), afterKill.Load(), got)

	// Restart the whole cluster from its data directories.
	for _, s := range c.Stores {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range c.Stores {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if after := maxID(t, c, "kill"); after != got {
		t.Fatalf("max_id after restart from disk %d, before %d", after, got)
	}
	// And the next reservation continues above it.
	l, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.StoreClient(l).ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "kill"}))
	if err != nil || res.Msg.GetFirst() != got+1 {
		t.Fatalf("reservation after restart: %v %v, want first %d", res, err, got+1)
	}
}

// A member joins with --join, serves (forwarding writes), and is removed;
// with the HTTP/1.1 front and without.
func TestJoinForwardAndRemoveMember(t *testing.T) {
	launchtest.EachFastHTTP(t, testJoinForwardAndRemoveMember)
}

func testJoinForwardAndRemoveMember(t *testing.T, flags []string) {
	c, ctx, leader, follower := threeStores(t, flags, 60*time.Second)
	createTag(t, c, follower, "fwd", 100) // a write to a follower is forwarded
	res, err := c.StoreClient(follower).ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "fwd", Size: 5}))
	if err != nil || res.Msg.GetFirst() != 1 || res.Msg.GetLast() != 5 {
		t.Fatalf("reserve via follower: %v %v", res, err)
	}
	if got := maxID(t, c, "fwd"); got != 5 {
		t.Fatalf("max_id via leader %d, want 5", got)
	}

	hp, err := launch.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	rp, err := launch.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s4 := &launch.Proc{
		Name: "s4", Kind: launch.KindStore, NodeID: "s4",
		HTTPAddr: fmt.Sprintf("127.0.0.1:%d", hp), RaftAddr: fmt.Sprintf("127.0.0.1:%d", rp),
		DataDir: filepath.Join(dir, "data"), LogPath: filepath.Join(dir, "s4.log"),
		Binary: filepath.Join(launchtest.BinDir(t), "storesvr"), Join: follower.HTTPAddr,
		ExtraArgs: flags,
	}
	t.Cleanup(func() { _ = s4.Kill() })
	if err := s4.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, s4); err != nil {
		t.Fatal(err)
	}
	members := func(p *launch.Proc) map[string]string {
		st, err := c.Status(ctx, p)
		if err != nil {
			return nil
		}
		m := map[string]string{}
		for _, mem := range st.GetMembers() {
			m[mem.GetId()] = mem.GetSuffrage()
		}
		return m
	}
	for m := members(leader); m["s4"] != "voter"; m = members(leader) {
		if ctx.Err() != nil {
			t.Fatalf("s4 never became a voter: %v", m)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The new member serves a write (forwarded) and a linearizable read.
	// A request_id makes the retries of a leader change one reservation.
	err = errs.Retry(ctx, launchtest.Retry(errs.StoreCall), func(context.Context, int) (err error) {
		res, err = c.StoreClient(s4).ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "fwd", Size: 5, RequestId: "join-fwd"}))
		return err
	})
	if err != nil || res.Msg.GetFirst() != 6 {
		t.Fatalf("reserve via joined member: %v %v", res, err)
	}
	tg, err := c.StoreClient(s4).GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "fwd"}))
	if err != nil || tg.Msg.GetMaxId() != 10 {
		t.Fatalf("GetTag via joined member: %v %v", tg, err)
	}

	if _, err := c.StoreClient(follower).RemoveMember(ctx, connect.NewRequest(&seqsvrv1.RemoveMemberRequest{Id: "s4"})); err != nil {
		t.Fatalf("RemoveMember: %v", err)
	}
	if m := members(leader); len(m) != 3 || m["s4"] != "" {
		t.Fatalf("members after remove: %v", m)
	}
	// The three remaining still commit with s4 gone.
	_ = s4.Kill()
	if err := errs.Retry(ctx, launchtest.Retry(errs.StoreCall), func(context.Context, int) error {
		_, err := c.StoreClient(leader).ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "fwd"}))
		return err
	}); err != nil {
		t.Fatalf("reserve after remove: %v", err)
	}
}

// Every kind of bad input answers its contract code, does not crash the
// process, and changes nothing; with the HTTP/1.1 front and without.
func TestBadInputCodes(t *testing.T) {
	launchtest.EachFastHTTP(t, testBadInputCodes)
}

func testBadInputCodes(t *testing.T, flags []string) {
	c, ctx, leader, follower := threeStores(t, flags, 60*time.Second)
	sc := c.StoreClient(follower)
	createTag(t, c, leader, "ok", 10)
	if _, err := c.StoreClient(leader).CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "edge", Start: math.MaxInt64 - 5})); err != nil {
		t.Fatal(err)
	}
	want := func(name string, err error, code connect.Code) {
		t.Helper()
		if connect.CodeOf(err) != code {
			t.Errorf("%s: code %v (%v), want %v", name, connect.CodeOf(err), err, code)
		}
	}
	for _, tag := range []string{"", "has space", strings.Repeat("x", 129), "ä", "a/b"} {
		_, err := sc.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: tag}))
		want(fmt.Sprintf("reserve tag %q", tag), err, connect.CodeInvalidArgument)
		_, err = sc.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: tag}))
		want(fmt.Sprintf("create tag %q", tag), err, connect.CodeInvalidArgument)
	}
	_, err := sc.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "ok", Size: -1}))
	want("negative size", err, connect.CodeInvalidArgument)
	_, err = sc.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "neg", Step: -5}))
	want("negative step", err, connect.CodeInvalidArgument)
	_, err = sc.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "neg", Start: -5}))
	want("negative start", err, connect.CodeInvalidArgument)
	_, err = sc.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "edge", Size: 6}))
	want("overflow", err, connect.CodeResourceExhausted)
	_, err = sc.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "edge", Size: math.MaxInt64}))
	want("huge size", err, connect.CodeInvalidArgument)
	_, err = sc.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "ok", Size: 100_000_001}))
	want("size above the default --max-segment-size", err, connect.CodeInvalidArgument)
	_, err = sc.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "big", Step: 100_000_001}))
	want("step above the default --max-segment-size", err, connect.CodeInvalidArgument)
	_, err = sc.UpdateTag(ctx, connect.NewRequest(&seqsvrv1.UpdateTagRequest{Tag: "ok", Step: 100_000_001}))
	want("update step above the default --max-segment-size", err, connect.CodeInvalidArgument)
	_, err = sc.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "nope"}))
	want("unknown tag reserve", err, connect.CodeNotFound)
	_, err = sc.GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "nope"}))
	want("unknown tag get", err, connect.CodeNotFound)
	_, err = sc.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "ok"}))
	want("duplicate create", err, connect.CodeAlreadyExists)
	// The message follows the code once: "already_exists: tag ...", never
	// "already_exists: already exists: ...".
	if msg := err.Error(); !strings.HasPrefix(msg, "already_exists: ") || strings.Contains(msg, "already exists") {
		t.Errorf("duplicate create: message %q repeats the code", msg)
	}

	post := func(body string) (int, string) {
		t.Helper()
		res, err := http.Post(follower.URL()+seqsvrv1connect.StoreServiceReserveSegmentProcedure, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, body := post(`{"tag":"ok",`); code != 400 || !strings.Contains(body, "invalid_argument") {
		t.Errorf("malformed JSON: %d %s", code, body)
	}
	if code, body := post(`{"tag":"ok","size":"ten"}`); code != 400 || !strings.Contains(body, "invalid_argument") {
		t.Errorf("wrong JSON type: %d %s", code, body)
	}
	if code, body := post(`{"tag":"ok","description":"` + strings.Repeat("x", 2<<20) + `"}`); code != 429 || !strings.Contains(body, "resource_exhausted") {
		t.Errorf("oversized body: %d %.200s", code, body)
	}

	// Nothing above moved max_id, and every member is still up.
	if got := maxID(t, c, "ok"); got != 0 {
		t.Fatalf("bad input moved max_id to %d", got)
	}
	if got := maxID(t, c, "edge"); got != math.MaxInt64-5 {
		t.Fatalf("refused overflow moved max_id to %d", got)
	}
	for _, s := range c.Stores {
		if !s.Running() {
			t.Fatalf("%s died on bad input", s.Name)
		}
	}
	res, err := sc.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "ok"}))
	if err != nil || res.Msg.GetFirst() != 1 || res.Msg.GetLast() != 10 {
		t.Fatalf("first good reservation after bad input: %v %v", res, err)
	}
}

// /metrics carries hashicorp/raft's own metrics (go-metrics Prometheus sink,
// -tags hashicorpmetrics), plus health, reflection-free gRPC and h2c; with
// the HTTP/1.1 front and without.
func TestMetricsHealthAndProtocols(t *testing.T) {
	launchtest.EachFastHTTP(t, testMetricsHealthAndProtocols)
}

func testMetricsHealthAndProtocols(t *testing.T, flags []string) {
	c, ctx, leader, _ := threeStores(t, flags, 30*time.Second)
	createTag(t, c, leader, "m", 10)
	for _, s := range c.Stores {
		launchtest.WantFront(t, s.URL(), flags)
	}
	res, err := http.Get(leader.URL() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	for _, want := range []string{"\nraft_apply ", "\nraft_commitTime", "go_goroutines"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %q", strings.TrimSpace(want))
		}
	}
	// gRPC over h2c against a follower.
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	h2c := &http.Client{Transport: &http.Transport{Protocols: &p}}
	for _, s := range c.Stores {
		g := seqsvrv1connect.NewStoreServiceClient(h2c, s.URL(), connect.WithGRPC())
		if err := errs.Retry(ctx, launchtest.Retry(errs.StoreCall), func(context.Context, int) error {
			_, err := g.GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "m"}))
			return err
		}); err != nil {
			t.Fatalf("gRPC GetTag on %s: %v", s.Name, err)
		}
	}
	hres, err := http.Post(leader.URL()+"/grpc.health.v1.Health/Check", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := io.ReadAll(hres.Body)
	hres.Body.Close()
	if !strings.Contains(string(hb), "_SERVING\"") {
		t.Fatalf("health: %d %s", hres.StatusCode, hb)
	}
}

// Three command lines started in reverse order, a moment apart, still form
// one cluster.
func TestAnyStartOrder(t *testing.T) {
	launchtest.SkipShort(t)
	c, err := launch.New(launch.Options{BinDir: launchtest.BinDir(t), Dir: t.TempDir(), Stores: 3, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx := launchtest.Context(t, 30*time.Second)
	for i := len(c.Stores) - 1; i >= 0; i-- {
		if err := c.Stores[i].Start(ctx); err != nil {
			t.Fatal(err)
		}
		time.Sleep(700 * time.Millisecond) // the scenario: a human starting them one by one
	}
	l, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Stores {
		if err := c.WaitReady(ctx, s); err != nil {
			t.Fatal(err)
		}
		st, err := c.Status(ctx, s)
		if err != nil || st.GetLeaderId() != l.NodeID || len(st.GetMembers()) != 3 {
			t.Fatalf("%s sees %v (%v), want leader %s and 3 members", s.Name, st, err, l.NodeID)
		}
	}
}

// A storesvr pointed at a data dir a live storesvr holds exits at once with
// an error naming the directory, instead of blocking on bolt's lock.
func TestDataDirInUseExits(t *testing.T) {
	c := launchtest.StartCluster(t, 1, 0, nil, nil)
	held := c.Stores[0]
	ports := make([]string, 2)
	for i := range ports {
		p, err := launch.FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = fmt.Sprintf("127.0.0.1:%d", p)
	}
	ctx := launchtest.Context(t, 20*time.Second)
	cmd := exec.CommandContext(ctx, filepath.Join(launchtest.BinDir(t), "storesvr"),
		"--node-id", held.NodeID, "--raft-addr", ports[0], "--http-addr", ports[1], "--data-dir", held.DataDir,
		"--peers", held.NodeID+"="+ports[0]+"@"+ports[1])
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || ctx.Err() != nil {
		t.Fatalf("second storesvr on %s: %v (context %v), want a prompt non-zero exit\n%s", held.DataDir, err, ctx.Err(), out)
	}
	if !strings.Contains(string(out), held.DataDir) || !strings.Contains(string(out), "in use") {
		t.Fatalf("exit message does not name the data dir in use:\n%s", out)
	}
	if !held.Running() {
		t.Fatal("the storesvr holding the data dir died")
	}
}
