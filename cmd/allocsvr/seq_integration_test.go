package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
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
	"github.com/seqsvr/seqsvr/internal/spec"
)

// Short per-key leases: the store's lease is 2 s, allocsvrs heartbeat
// every 100 ms and fence 500 ms before an unrenewed lease ends.
var (
	seqLeaseTTL  = 2 * time.Second
	seqStoreArgs = []string{"--seq-lease-ttl", seqLeaseTTL.String()}
	seqAllocArgs = []string{"--seq-heartbeat-interval", "100ms", "--seq-fence-margin", "500ms"}
)

// seqKeys are every key of the test space: 4 sections of 10.
var seqKeys = func() []uint64 {
	k := make([]uint64, 40)
	for i := range k {
		k[i] = uint64(i)
	}
	return k
}()

// perKey checks guarantee 8 for calls made one after another: every value
// a key is answered is above the last one it was answered.
type perKey struct {
	mu   sync.Mutex
	last map[uint64]int64
}

func (p *perKey) check(t *testing.T, who string, keys []uint64, seqs []int64, next bool) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(seqs) != len(keys) {
		t.Fatalf("%s: %d values for %d keys", who, len(seqs), len(keys))
	}
	for i, k := range keys {
		switch last := p.last[k]; {
		case next && seqs[i] <= last:
			t.Fatalf("%s: key %d answered %d after %d", who, k, seqs[i], last)
		case !next && seqs[i] < last:
			t.Fatalf("%s: key %d current %d below the answered %d", who, k, seqs[i], last)
		}
		p.last[k] = seqs[i]
	}
}

type seqTest struct {
	t    *testing.T
	c    *launch.Cluster
	keys perKey
}

func (s *seqTest) client(p *launch.Proc) seqsvrv1connect.SeqServiceClient {
	return seqsvrv1connect.NewSeqServiceClient(s.c.HTTPClient(), p.URL())
}

// next takes the next value of keys through p and checks them.
func (s *seqTest) next(ctx context.Context, p *launch.Proc, keys []uint64) error {
	res, err := s.client(p).NextSeqs(ctx, connect.NewRequest(&seqsvrv1.NextSeqsRequest{Space: "s", Keys: keys}))
	if err != nil {
		return err
	}
	if res.Msg.GetRoutingVersion() == 0 {
		s.t.Fatalf("%s: routing_version 0", p.Name)
	}
	s.keys.check(s.t, p.Name, keys, res.Msg.GetSeqs(), true)
	return nil
}

// within retries f (on unavailable only, each try bounded by 2 s) until
// it succeeds, failing the test when that takes longer than limit; it
// answers how long it took.
func (s *seqTest) within(what string, limit time.Duration, f func(context.Context) error) time.Duration {
	s.t.Helper()
	return poll.Timed(s.t, limit, what, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := f(ctx)
		if err != nil && connect.CodeOf(err) != connect.CodeUnavailable {
			s.t.Fatalf("%s: %v", what, err)
		}
		return err
	})
}

// owners is who owns each section by p's table, "" for none or a pending
// handover.
func (s *seqTest) owners(p *launch.Proc) []string {
	res, err := s.client(p).Routing(launchtest.Context(s.t, 5*time.Second), connect.NewRequest(&seqsvrv1.RoutingRequest{Space: "s"}))
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range res.Msg.GetSections() {
		for range r.GetLastSection() - r.GetFirstSection() + 1 {
			if r.GetNextOwner() != "" {
				out = append(out, "")
			} else {
				out = append(out, r.GetOwner())
			}
		}
	}
	return out
}

// settled waits until p's table gives every section to one of want, each
// of which owns some.
func (s *seqTest) settled(p *launch.Proc, want ...string) {
	s.t.Helper()
	poll.UntilCtx(launchtest.Context(s.t, 15*time.Second), s.t, fmt.Sprintf("%s's table spread over %v", p.Name, want), func() bool {
		got := s.owners(p)
		seen := map[string]bool{}
		for _, o := range got {
			seen[o] = true
		}
		if len(got) != 4 || seen[""] || len(seen) != len(want) {
			return false
		}
		for _, w := range want {
			if !seen[w] {
				return false
			}
		}
		return true
	})
}

func TestSeqAcrossAllocsvrs(t *testing.T) {
	c := launchtest.StartCluster(t, 3, 2, seqStoreArgs, seqAllocArgs)
	s := &seqTest{t: t, c: c, keys: perKey{last: map[uint64]int64{}}}
	leader, err := c.Leader(launchtest.Context(t, 30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.StoreClient(leader).CreateSpace(launchtest.Context(t, 10*time.Second), connect.NewRequest(&seqsvrv1.CreateSpaceRequest{Space: "s", KeyCount: 40, SectionSize: 10, Step: 100}))
	if err != nil {
		t.Fatal(err)
	}
	a1, a2 := c.Allocs[0], c.Allocs[1]
	s.settled(a1, "a1", "a2")
	s.settled(a2, "a1", "a2")

	t.Run("both allocsvrs, forwarding", func(t *testing.T) {
		for round := range 3 {
			for _, p := range []*launch.Proc{a1, a2} {
				s.within(fmt.Sprintf("round %d through %s", round, p.Name), 5*time.Second, func(ctx context.Context) error {
					return s.next(ctx, p, append([]uint64{7, 31, 7}, seqKeys...))
				})
			}
		}
		for _, p := range []*launch.Proc{a1, a2} {
			if f, _ := launchtest.Metric(t, p.URL(), "seqsvr_seq_forwards_total"); f == 0 {
				t.Fatalf("%s forwarded nothing", p.Name)
			}
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			space string
			keys  []uint64
			code  connect.Code
		}{
			{"unknown space", "nope", []uint64{1}, connect.CodeNotFound},
			{"key = key_count", "s", []uint64{40}, connect.CodeInvalidArgument},
			{"no keys", "s", nil, connect.CodeInvalidArgument},
			{"too many keys", "s", make([]uint64, spec.MaxCount+1), connect.CodeInvalidArgument},
		} {
			_, err := s.client(a1).NextSeqs(launchtest.Context(t, 5*time.Second), connect.NewRequest(&seqsvrv1.NextSeqsRequest{Space: tc.space, Keys: tc.keys}))
			if connect.CodeOf(err) != tc.code {
				t.Errorf("%s: %v, want %v", tc.name, err, tc.code)
			}
		}
	})

	t.Run("leaf GETs", func(t *testing.T) {
		for _, p := range []*launch.Proc{a1, a2} {
			for _, k := range []uint64{3, 33} {
				v := leafSeq(t, p, "next", k)
				s.keys.check(t, p.Name+" leaf", []uint64{k}, []int64{v}, true)
				if cur := leafSeq(t, p, "current", k); cur != v {
					t.Fatalf("%s: current of %d = %d after next answered %d", p.Name, k, cur, v)
				}
			}
		}
	})

	t.Run("a crashed allocsvr restarted on its data dir serves at once", func(t *testing.T) {
		// Its old lease still runs at the store; the data dir's lock proves
		// the old process dead, so the restart keeps its instance ID and
		// the store renews its lease at once instead of refusing it until
		// the lease expires (seq.LoadInstance).
		ctx := launchtest.Context(t, 30*time.Second)
		if err := a2.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := a2.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitReady(ctx, a2); err != nil {
			t.Fatal(err)
		}
		took := s.within("a2 serving every key after its restart", seqLeaseTTL/2, func(ctx context.Context) error {
			return s.next(ctx, a2, seqKeys)
		})
		t.Logf("a2 served every key %v after it was ready again", took)
	})

	t.Run("SIGTERM moves sections", func(t *testing.T) {
		if err := a2.Stop(); err != nil {
			t.Fatal(err)
		}
		took := s.within("a1 serving every key after a2 stopped", 2*time.Second, func(ctx context.Context) error {
			return s.next(ctx, a1, seqKeys)
		})
		t.Logf("a2's sections served by a1 %v after its stop", took)
	})

	a3, err := c.NewAlloc("a3", "a3")
	if err != nil {
		t.Fatal(err)
	}
	t.Run("a new allocsvr takes a share", func(t *testing.T) {
		ctx := launchtest.Context(t, 30*time.Second)
		if err := a3.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitReady(ctx, a3); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { s.settled(a1, "a1", "a3"); s.settled(a3, "a1", "a3"); close(done) }()
		for moving := true; moving; {
			select {
			case <-done:
				moving = false
			default:
			}
			for _, p := range []*launch.Proc{a1, a3} {
				s.within("every key while sections move to a3", 2*time.Second, func(ctx context.Context) error {
					return s.next(ctx, p, seqKeys)
				})
			}
		}
	})

	t.Run("SIGKILL of an owner", func(t *testing.T) {
		owner := s.owners(a1)[0]
		victim, survivor := a1, a3
		if owner == "a3" {
			victim, survivor = a3, a1
		}
		// Space z: a few keys used before the crash, the others never.
		ctx := launchtest.Context(t, 30*time.Second)
		if _, err := c.StoreClient(leader).CreateSpace(ctx, connect.NewRequest(&seqsvrv1.CreateSpaceRequest{Space: "z", KeyCount: 40, SectionSize: 10, Step: 100})); err != nil {
			t.Fatal(err)
		}
		zUsed := []uint64{1, 12, 25, 38}
		var zVals []int64
		// Every allocsvr learns of z with its next heartbeat; until then a
		// forwarded call may answer not_found.
		poll.UntilCtx(ctx, t, "space z served", func() bool {
			res, err := s.client(survivor).NextSeqs(ctx, connect.NewRequest(&seqsvrv1.NextSeqsRequest{Space: "z", Keys: zUsed}))
			if err == nil {
				zVals = res.Msg.GetSeqs()
			}
			return err == nil
		})
		if err := victim.Kill(); err != nil {
			t.Fatal(err)
		}
		took := s.within(survivor.Name+" serving every key after "+victim.Name+" was killed", seqLeaseTTL+2*time.Second, func(ctx context.Context) error {
			return s.next(ctx, survivor, seqKeys)
		})
		t.Logf("%s's sections served by %s %v after the kill", victim.Name, survivor.Name, took)
		cur, err := s.client(survivor).CurrentSeqs(launchtest.Context(t, 5*time.Second), connect.NewRequest(&seqsvrv1.CurrentSeqsRequest{Space: "s", Keys: seqKeys}))
		if err != nil {
			t.Fatal(err)
		}
		s.keys.check(t, survivor.Name+" current", seqKeys, cur.Msg.GetSeqs(), false)

		// After the crash handover, CurrentSeqs is 0 for every key of z
		// never used (the contract) and at least the answered value for
		// the others.
		var zCur []int64
		s.within("space z current after the kill", seqLeaseTTL+2*time.Second, func(ctx context.Context) error {
			res, err := s.client(survivor).CurrentSeqs(ctx, connect.NewRequest(&seqsvrv1.CurrentSeqsRequest{Space: "z", Keys: seqKeys}))
			if err == nil {
				zCur = res.Msg.GetSeqs()
			}
			return err
		})
		for k, v := range zCur {
			i := slices.Index(zUsed, uint64(k))
			switch {
			case i >= 0 && v < zVals[i]:
				t.Errorf("z key %d: current %d below the answered %d", k, v, zVals[i])
			case i < 0 && v != 0:
				t.Errorf("z key %d, never used: current %d, want 0", k, v)
			}
		}
	})
}

// leafSeq is GET /api/seq/{what}/s/{key} on p: a plain number.
func leafSeq(t *testing.T, p *launch.Proc, what string, key uint64) int64 {
	t.Helper()
	var v int64
	poll.UntilOK(t, 5*time.Second, fmt.Sprintf("%s GET %s %d", p.Name, what, key), func() error {
		code, body := httpGet(t, fmt.Sprintf("%s/api/seq/%s/s/%d", p.URL(), what, key))
		if code == 200 {
			var err error
			if v, err = strconv.ParseInt(body, 10, 64); err != nil {
				t.Fatalf("%s: body %q is not a plain number", p.Name, body)
			}
			return nil
		}
		if code != 503 {
			t.Fatalf("%s GET %s %d: %d %q", p.Name, what, key, code, strings.TrimSpace(body))
		}
		return fmt.Errorf("%d %q", code, strings.TrimSpace(body))
	})
	return v
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, string(b)
}
