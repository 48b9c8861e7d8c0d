package snowflake

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/clock"
	"github.com/seqsvr/seqsvr/internal/clock/clocktest"
	"github.com/seqsvr/seqsvr/internal/durable"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/spec"
)

func testConfig(node string, clk clock.Clock, dir string) Config {
	return Config{
		NodeID:        node,
		DataDir:       dir,
		Clock:         clk,
		Logger:        slog.New(slog.DiscardHandler),
		RenewInterval: time.Hour, // tests drive renewals themselves
		FenceMargin:   2 * time.Second,
	}
}

func startTest(t *testing.T, store WorkerStore, cfg Config, startTimeout time.Duration) *Service {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	s, err := Start(ctx, store, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func takeIDs(t *testing.T, s *Service, n int) []int64 {
	t.Helper()
	ids, err := s.NextIDs(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("not increasing: %d after %d", ids[i], ids[i-1])
		}
	}
	return ids
}

// crash stops s as a killed process would: no Close, nothing persisted
// beyond what was written during operation, data-dir lock released.
func crash(s *Service) {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.cancel()
		<-s.done
		if g := s.gen.Load(); g != nil {
			g.extWG.Wait()
		}
		s.cache.close()
	})
}

func TestSnowflakeStartRegistersAndServes(t *testing.T) {
	clk := clocktest.New(t0)
	store := newFakeWorkerStore(clk)
	reg := prometheus.NewRegistry()
	cfg := testConfig("a", clk, "")
	cfg.Registerer = reg
	a := startTest(t, store, cfg, time.Second)
	b := startTest(t, store, testConfig("b", clk, ""), time.Second)

	ids := takeIDs(t, a, 5)
	bid := takeIDs(t, b, 1)[0]
	if split(ids[0]).worker == split(bid).worker {
		t.Fatalf("two nodes share worker ID %d", split(bid).worker)
	}
	st := a.Status()
	if !st.GetEnabled() || st.GetFenced() || st.GetWorkerId() != 0 || st.GetNodeId() != "a" ||
		st.GetLeaseExpiresMs() != t0.UnixMilli()+10000 || st.GetLayout().GetSequenceBits() != 12 ||
		st.GetLastTimestampMs() != t0.UnixMilli()+1 { // the store's floor is the registration time
		t.Fatalf("status = %v", st)
	}
	d, err := a.Decode(ids[4])
	if err != nil || d.GetWorkerId() != 0 || d.GetSequence() != 4 || d.GetTimestampMs() != t0.UnixMilli()+1 {
		t.Fatalf("decode = %v, %v", d, err)
	}
	for _, bad := range []int64{-5, (t0.UnixMilli() + 3600_000 - spec.DefaultEpochMs) << 22} {
		if _, err := a.Decode(bad); connect.CodeOf(errs.Connect(err)) != connect.CodeInvalidArgument {
			t.Fatalf("decode %d: %v, want invalid_argument", bad, err)
		}
	}
	for _, n := range []int{0, 10001} {
		if _, err := a.NextIDs(context.Background(), n); !errors.Is(err, errs.InvalidArgument) {
			t.Fatalf("count %d: %v", n, err)
		}
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			got[f.GetName()] += m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	if got["seqsvr_snowflake_ids_total"] != 5 || got["seqsvr_snowflake_worker_id"] != 0 || got["seqsvr_snowflake_fenced"] != 0 ||
		got["seqsvr_snowflake_worker_registrations_total"] != 1 {
		t.Fatalf("metrics = %v", got)
	}
	if _, ok := got["seqsvr_snowflake_fenced"]; !ok {
		t.Fatal("fenced gauge not registered")
	}
}

func TestSnowflakeBadConfig(t *testing.T) {
	clk := clocktest.New(t0)
	if _, err := Start(context.Background(), nil, testConfig("a", clk, "")); !errors.Is(err, errs.InvalidArgument) {
		t.Fatalf("nil store: %v", err)
	}
	if _, err := Start(context.Background(), newFakeWorkerStore(clk), testConfig("", clk, "")); !errors.Is(err, errs.InvalidArgument) {
		t.Fatalf("no node ID: %v", err)
	}
}

func TestSnowflakeClockOffsetRefusesStart(t *testing.T) {
	for _, tc := range []struct {
		name       string
		skew       time.Duration
		noLeader   bool
		regDelay   time.Duration
		wantRefuse bool
	}{
		{"leader ahead", 5 * time.Second, false, 0, true},
		{"leader behind", -5 * time.Second, false, 0, true},
		{"via ClusterStatus", 5 * time.Second, true, 0, true},
		{"within tolerance", 500 * time.Millisecond, false, 0, false},
		// A 4s registration round trip would put the midpoint estimate 2s
		// off; the quick ClusterStatus re-measures.
		{"slow round trip re-measured", 500 * time.Millisecond, false, 4 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktest.New(t0)
			store := newFakeWorkerStore(clk)
			store.leaderSkew, store.noLeaderNow, store.regDelay = tc.skew, tc.noLeader, tc.regDelay
			s, err := Start(context.Background(), store, testConfig("a", clk, ""))
			if tc.wantRefuse {
				if !errors.Is(err, ErrClockOffset) || !strings.Contains(err.Error(), "ms off the store leader") {
					t.Fatalf("err = %v, want ErrClockOffset", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if got := s.Status().GetClockOffsetMs(); got != -500 {
				t.Fatalf("clock offset = %d, want -500", got)
			}
		})
	}
}

func TestSnowflakeStoreFloorRespected(t *testing.T) {
	clk := clocktest.New(t0)
	store := newFakeWorkerStore(clk)
	// An earlier process held the worker; its lease has expired, so the
	// store hands the worker over with a floor raised by the lease TTL.
	if _, err := store.RegisterWorker(context.Background(), regReq("a", "old", clk)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * time.Second)
	// The old holder last reported shortly before now; a new holder's floor
	// is that plus the TTL, in our future.
	store.set(func(f *fakeWorkerStore) { f.nodes["a"].lastTs = clk.Now().UnixMilli() - 100 })
	s := startTest(t, store, testConfig("a", clk, ""), time.Second)
	floor := store.lastTs("a")
	if floor <= clk.Now().UnixMilli() {
		t.Fatalf("fake store floor %d not ahead of the clock", floor)
	}
	_, err := s.NextIDs(context.Background(), 1)
	if !errors.Is(err, errs.Unavailable) || !strings.Contains(err.Error(), "timestamp floor") {
		t.Fatalf("err = %v, want unavailable below the floor", err)
	}
	advanceRenewing(t, clk, s, time.Duration(floor-clk.Now().UnixMilli())*time.Millisecond)
	// The clock now reads the floor itself: the ID waits for the next ms.
	if ts := split(takeIDs(t, s, 1)[0]).ts; ts <= floor {
		t.Fatalf("ts %d not above the store floor %d", ts, floor)
	}
}

func TestSnowflakeSelfFenceAndRecovery(t *testing.T) {
	clk := clocktest.New(t0)
	store := newFakeWorkerStore(clk)
	s := startTest(t, store, testConfig("a", clk, ""), time.Second)
	takeIDs(t, s, 1)

	store.set(func(f *fakeWorkerStore) {
		f.renewErr = connect.NewError(connect.CodeUnavailable, errors.New("no leader"))
	})
	clk.Advance(7 * time.Second)
	if err := s.renewWorker(context.Background()); err == nil {
		t.Fatal("renewal succeeded against a failing store")
	}
	takeIDs(t, s, 1) // 7s < TTL 10s - margin 2s: still serving

	clk.Advance(time.Second + time.Millisecond)
	_, err := s.NextIDs(context.Background(), 1)
	if connect.CodeOf(errs.Connect(err)) != connect.CodeFailedPrecondition || !strings.Contains(err.Error(), "worker lease lost") {
		t.Fatalf("err = %v, want failed_precondition worker lease lost", err)
	}
	if st := s.Status(); !st.GetFenced() || !strings.Contains(st.GetReason(), "lease lost") {
		t.Fatalf("status = %v, want fenced", st)
	}

	store.set(func(f *fakeWorkerStore) { f.renewErr = nil })
	if err := s.renewWorker(context.Background()); err != nil {
		t.Fatal(err)
	}
	takeIDs(t, s, 3)
	if st := s.Status(); st.GetFenced() || st.GetLeaseExpiresMs() != clk.Now().UnixMilli()+10000 {
		t.Fatalf("status after recovery = %v", st)
	}
}

func TestSnowflakeLeaseTakenByTwinFences(t *testing.T) {
	clk := clocktest.New(t0)
	store := newFakeWorkerStore(clk)
	a := startTest(t, store, testConfig("a", clk, ""), time.Second)
	aIDs := takeIDs(t, a, 100)

	// a is partitioned long enough for its lease to expire; a twin with the
	// same node ID registers and gets the worker ID.
	clk.Advance(10*time.Second + time.Millisecond)
	twin := startTest(t, store, testConfig("a", clk, ""), time.Second)
	tIDs := takeIDs(t, twin, 100)
	if split(tIDs[0]).worker != split(aIDs[0]).worker {
		t.Fatal("twin got another worker ID; the test needs it to reuse a's")
	}
	if split(tIDs[0]).ts <= split(aIDs[len(aIDs)-1]).ts {
		t.Fatalf("twin ts %d not above a's last %d", split(tIDs[0]).ts, split(aIDs[len(aIDs)-1]).ts)
	}

	if err := a.renewWorker(context.Background()); !workerLeaseLost(err) {
		t.Fatalf("renewal of a taken lease: %v", err)
	}
	_, err := a.NextIDs(context.Background(), 1)
	if !errors.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "taken by another process") {
		t.Fatalf("err = %v, want failed precondition: taken", err)
	}
	if err := a.registerWorker(context.Background()); !workerLeaseLost(err) {
		t.Fatalf("re-register while the twin is live: %v", err)
	}
	if _, err := a.NextIDs(context.Background(), 1); !errors.Is(err, errs.FailedPrecondition) {
		t.Fatalf("after a refused re-register: %v", err)
	}

	// The twin goes away; once its lease expires, a gets the worker back
	// and continues above everything either of them issued.
	twin.Close()
	clk.Advance(10*time.Second + time.Millisecond)
	if err := a.registerWorker(context.Background()); err != nil {
		t.Fatal(err)
	}
	again := takeIDs(t, a, 1)[0]
	if again <= tIDs[len(tIDs)-1] || again <= aIDs[len(aIDs)-1] {
		t.Fatalf("a's ID %d after the twin not above %d / %d", again, tIDs[len(tIDs)-1], aIDs[len(aIDs)-1])
	}
}

func TestSnowflakeStoreForgotWorkerReregisters(t *testing.T) {
	clk := clocktest.New(t0)
	store := newFakeWorkerStore(clk)
	startTest(t, store, testConfig("other", clk, ""), time.Second) // takes worker 0
	s := startTest(t, store, testConfig("a", clk, ""), time.Second)
	before := takeIDs(t, s, 1)[0]
	store.set(func(f *fakeWorkerStore) { delete(f.nodes, "a") })
	if err := s.renewWorker(context.Background()); !workerLeaseLost(err) {
		t.Fatalf("renewal of a forgotten worker: %v", err)
	}
	if _, err := s.NextIDs(context.Background(), 1); !errors.Is(err, errs.FailedPrecondition) {
		t.Fatalf("after the store forgot the worker: %v", err)
	}
	if err := s.registerWorker(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := takeIDs(t, s, 1)[0]
	if after <= before || split(after).worker == split(before).worker {
		t.Fatalf("after re-registering: %+v then %+v, want a new worker and a larger ID", split(before), split(after))
	}
}

func TestSnowflakeRestartAfterCrashRespectsHighWater(t *testing.T) {
	dir := t.TempDir()
	clk := clocktest.New(t0)
	a := startTest(t, newFakeWorkerStore(clk), testConfig("a", clk, dir), time.Second)
	var aIDs []int64
	for range 30 {
		aIDs = append(aIDs, takeIDs(t, a, 10)...)
		clk.Advance(7 * time.Millisecond)
	}
	crash(a)
	hwm := readCache(t, dir).HighWaterMs
	if last := split(aIDs[len(aIDs)-1]).ts; hwm < last {
		t.Fatalf("cached high-water %d below the last issued ts %d", hwm, last)
	}

	// The store lost its records (worst case): only the cache protects.
	b := startTest(t, newFakeWorkerStore(clk), testConfig("a", clk, dir), time.Second)
	if _, err := b.NextIDs(context.Background(), 1); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("right after restart: %v, want unavailable below the high-water mark", err)
	}
	clk.Advance(time.Duration(hwm-clk.Now().UnixMilli()+1) * time.Millisecond)
	first := takeIDs(t, b, 1)[0]
	if split(first).ts <= hwm || first <= aIDs[len(aIDs)-1] {
		t.Fatalf("restart issued %+v, not above the high-water %d", split(first), hwm)
	}
}

func TestSnowflakeCleanCloseRestartsAtOnce(t *testing.T) {
	dir := t.TempDir()
	clk := clocktest.New(t0)
	a := startTest(t, newFakeWorkerStore(clk), testConfig("a", clk, dir), time.Second)
	last := takeIDs(t, a, 50)[49]
	a.Close()
	if _, err := a.NextIDs(context.Background(), 1); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("after Close: %v", err)
	}
	if got := readCache(t, dir).HighWaterMs; got != split(last).ts {
		t.Fatalf("cache high-water after Close = %d, want the last ts %d", got, split(last).ts)
	}
	clk.Advance(time.Millisecond)
	b := startTest(t, newFakeWorkerStore(clk), testConfig("a", clk, dir), time.Second)
	if next := takeIDs(t, b, 1)[0]; next <= last {
		t.Fatalf("restart issued %d after %d", next, last)
	}
}

func TestSnowflakeRestartFromCacheWhileStoreDown(t *testing.T) {
	dir := t.TempDir()
	clk := clocktest.New(t0)
	store := newFakeWorkerStore(clk)
	a := startTest(t, store, testConfig("a", clk, dir), time.Second)
	aIDs := takeIDs(t, a, 20)
	crash(a)

	store.set(func(f *fakeWorkerStore) { f.down = connect.NewError(connect.CodeUnavailable, errors.New("store down")) })
	b := startTest(t, store, testConfig("a", clk, dir), 300*time.Millisecond)
	if st := b.Status(); st.GetFenced() || !strings.Contains(st.GetReason(), "data-dir cache") {
		t.Fatalf("status = %v, want serving from the cache", st)
	}
	c := readCache(t, dir)
	clk.Advance(time.Duration(c.HighWaterMs-clk.Now().UnixMilli()+1) * time.Millisecond)
	bIDs := takeIDs(t, b, 20)
	if bIDs[0] <= aIDs[len(aIDs)-1] || split(bIDs[0]).ts <= c.HighWaterMs {
		t.Fatalf("cache start issued %+v, not above %d", split(bIDs[0]), c.HighWaterMs)
	}
	// The cached lease proves nothing past its bound.
	clk.Advance(time.Duration(c.LeaseValidUntilMs-clk.Now().UnixMilli()+1) * time.Millisecond)
	if _, err := b.NextIDs(context.Background(), 1); !errors.Is(err, errs.FailedPrecondition) {
		t.Fatalf("past the cached lease bound: %v", err)
	}

	// The store comes back after the old lease expired: the background
	// loop registers and IDs continue above everything.
	clk.Advance(3 * time.Second)
	store.set(func(f *fakeWorkerStore) { f.down = nil })
	poll.Until(t, 10*time.Second, "b to unfence", func() bool { return !b.Status().GetFenced() })
	if next := takeIDs(t, b, 1)[0]; next <= bIDs[len(bIDs)-1] {
		t.Fatalf("after registering: %d not above %d", next, bIDs[len(bIDs)-1])
	}
}

func TestSnowflakeExpiredCacheWaitsForStore(t *testing.T) {
	dir := t.TempDir()
	clk := clocktest.New(t0)
	store := newFakeWorkerStore(clk)
	a := startTest(t, store, testConfig("a", clk, dir), time.Second)
	takeIDs(t, a, 1)
	crash(a)

	clk.Advance(9 * time.Second) // beyond TTL - margin: the cache proves nothing
	store.set(func(f *fakeWorkerStore) { f.down = connect.NewError(connect.CodeUnavailable, errors.New("store down")) })
	b := startTest(t, store, testConfig("a", clk, dir), 300*time.Millisecond)
	_, err := b.NextIDs(context.Background(), 1)
	if connect.CodeOf(errs.Connect(err)) != connect.CodeUnavailable || !strings.Contains(err.Error(), "not registered") {
		t.Fatalf("err = %v, want unavailable: not registered", err)
	}
	if st := b.Status(); !st.GetFenced() || st.GetWorkerId() != -1 {
		t.Fatalf("status = %v", st)
	}
	clk.Advance(2 * time.Second) // old lease expired on the store
	store.set(func(f *fakeWorkerStore) { f.down = nil })
	poll.Until(t, 10*time.Second, "b to unfence", func() bool { return !b.Status().GetFenced() })
}

func TestSnowflakeDataDirLocked(t *testing.T) {
	dir := t.TempDir()
	clk := clocktest.New(t0)
	store := newFakeWorkerStore(clk)
	startTest(t, store, testConfig("a", clk, dir), time.Second)
	if s, err := Start(context.Background(), store, testConfig("a", clk, dir)); err == nil {
		s.Close()
		t.Fatal("a second process started on a locked data dir")
	}
}

func TestSnowflakeUniqueUnderConcurrencyWithRenewals(t *testing.T) {
	clk := clock.System()
	store := newFakeWorkerStore(clk)
	s := startTest(t, store, testConfig("a", clk, t.TempDir()), time.Second)
	const workers, per = 6, 2000
	out := make([][]int64, workers)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() { // renewals and status reads race with generation
		for {
			select {
			case <-stop:
				return
			default:
				_ = s.renewWorker(context.Background())
				_ = s.Status()
			}
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for len(out[w]) < per {
				ids, err := s.NextIDs(context.Background(), 1+len(out[w])%5)
				if err != nil {
					t.Error(err)
					return
				}
				out[w] = append(out[w], ids...)
			}
		}()
	}
	wg.Wait()
	close(stop)
	seen := map[int64]bool{}
	for _, ids := range out {
		for i, id := range ids {
			if seen[id] || (i > 0 && id <= ids[i-1]) {
				t.Fatalf("duplicate or decreasing ID %d", id)
			}
			seen[id] = true
		}
	}
}

func regReq(node, instance string, clk clock.Clock) *seqsvrv1.RegisterWorkerRequest {
	return &seqsvrv1.RegisterWorkerRequest{NodeId: node, InstanceId: instance, NowMs: clk.Now().UnixMilli()}
}

func readCache(t *testing.T, dir string) cacheData {
	t.Helper()
	_, b, err := durable.Read(filepath.Join(dir, cacheFile), cacheVersion)
	if err != nil {
		t.Fatal(err)
	}
	var d cacheData
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// advanceRenewing moves the clock by d, renewing every 3s like the loop.
func advanceRenewing(t *testing.T, clk *clocktest.Fake, s *Service, d time.Duration) {
	t.Helper()
	for d > 0 {
		step := min(d, 3*time.Second)
		clk.Advance(step)
		d -= step
		if err := s.renewWorker(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// A crash and restart on the same data dir keeps the instance ID (the dir
// lock proves the old process is gone), so the store hands the lease back
// without raising the floor by a lease TTL: IDs flow again once the clock
// passes the cached high-water mark, not ten seconds later. A twin with its
// own data dir is still a different instance and is refused.
func TestSnowflakeRestartSameDirKeepsInstance(t *testing.T) {
	dir := t.TempDir()
	clk := clocktest.New(t0)
	store := newFakeWorkerStore(clk)
	a := startTest(t, store, testConfig("a", clk, dir), time.Second)
	last := takeIDs(t, a, 20)[19]
	inst := a.instanceID
	crash(a)
	hwm := readCache(t, dir).HighWaterMs

	if _, err := store.RegisterWorker(context.Background(), &seqsvrv1.RegisterWorkerRequest{
		NodeId: "a", NowMs: clk.Now().UnixMilli(), InstanceId: "someone-else",
	}); !errors.Is(err, errs.FailedPrecondition) && connect.CodeOf(err) != connect.CodeFailedPrecondition {
		t.Fatalf("a twin's registration while the lease is live: %v, want failed_precondition", err)
	}

	b := startTest(t, store, testConfig("a", clk, dir), time.Second)
	if b.instanceID != inst {
		t.Fatalf("restart on the same dir took instance %q, want the cached %q", b.instanceID, inst)
	}
	clk.Advance(time.Duration(hwm-clk.Now().UnixMilli()+1) * time.Millisecond)
	first := takeIDs(t, b, 1)[0]
	if first <= last || split(first).ts <= hwm {
		t.Fatalf("restart issued %+v after %d (high-water %d)", split(first), last, hwm)
	}
	if wait := split(first).ts - split(last).ts; wait >= store.ttl.Milliseconds() {
		t.Fatalf("restart waited %dms, a whole lease TTL", wait)
	}
}

// TestSnowflakeTwinAtStartIsFailedPrecondition: a second process started
// with the node ID of a live one gets no worker ID; its calls answer
// failed_precondition naming the node ID (the contract's "node-id held by
// a live process"), not unavailable, until the live one's lease expires.
func TestSnowflakeTwinAtStartIsFailedPrecondition(t *testing.T) {
	clk := clocktest.New(t0)
	store := newFakeWorkerStore(clk)
	a := startTest(t, store, testConfig("a", clk, ""), time.Second)
	takeIDs(t, a, 1)

	twin := startTest(t, store, testConfig("a", clk, ""), 50*time.Millisecond)
	_, err := twin.NextIDs(context.Background(), 1)
	if !errors.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), `node-id "a" is held by a live process`) {
		t.Fatalf("twin: err = %v, want failed_precondition: node-id held by a live process", err)
	}
	if n := strings.Count(err.Error(), "precondition"); n != 1 || !strings.Contains(err.Error(), "worker lease held by another live process") {
		t.Fatalf("twin: %q: want the code once and the store's reason", err)
	}
	if st := twin.Status(); !strings.Contains(st.GetReason(), `node-id "a" is held by a live process`) {
		t.Fatalf("twin status reason %q", st.GetReason())
	}

	// A store that cannot be reached is still unavailable (retryable).
	other := startTest(t, &fakeWorkerStore{down: errors.New("connection refused")}, testConfig("b", clk, ""), 50*time.Millisecond)
	if _, err := other.NextIDs(context.Background(), 1); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("unreachable store: err = %v, want unavailable", err)
	}

	a.Close()
	clk.Advance(10*time.Second + time.Millisecond)
	if err := twin.registerWorker(context.Background()); err != nil {
		t.Fatal(err)
	}
	takeIDs(t, twin, 1)
}

// Takeover (the store's cluster ID changed) fences at once, even though
// the old lease had time left, and the run loop registers again without
// waiting for its next renewal (an hour here); IDs after it stay above
// the ones before, also when the restored store grants the same worker ID.
func TestSnowflakeTakeoverRegistersAgain(t *testing.T) {
	clk := clocktest.New(t0)
	store := newFakeWorkerStore(clk)
	s := startTest(t, store, testConfig("a", clk, t.TempDir()), time.Second)
	before := takeIDs(t, s, 3)
	// The restored store knows no live lease.
	store.set(func(f *fakeWorkerStore) {
		f.nodes, f.next = map[string]*fakeWorker{}, 0
		f.down = errors.New("restoring")
	})
	s.Takeover("store cluster ID changed from c1 to c2")
	if _, err := s.NextIDs(context.Background(), 1); !errors.Is(err, errs.FailedPrecondition) || !strings.Contains(err.Error(), "c2") {
		t.Fatalf("after Takeover: %v, want failed_precondition naming the change", err)
	}
	if st := s.Status(); !st.GetFenced() {
		t.Fatalf("status after Takeover: %v, want fenced", st)
	}
	store.set(func(f *fakeWorkerStore) { f.down = nil })
	poll.Until(t, 10*time.Second, "snowflake IDs again", func() bool {
		_, err := s.NextIDs(context.Background(), 1)
		return err == nil
	})
	after := takeIDs(t, s, 1)[0]
	if after <= before[len(before)-1] || split(after).worker != split(before[0]).worker {
		t.Fatalf("after the takeover: %+v, before %+v; want the same worker ID again and a larger ID", split(after), split(before[len(before)-1]))
	}
	if n := store.lastTs("a"); n == 0 {
		t.Fatal("the restored store saw no registration")
	}
}
