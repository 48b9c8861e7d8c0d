package storeclient

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/durable"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// restoredAt is a restore's generation (its start in Unix ms).
const restoredAt = int64(1_800_000_000_000)

// identified is a fake cluster of n members, led by its first, that
// answers id in ClusterStatus.
func identified(t *testing.T, n int, id Identity) *fakeCluster {
	fc := newFakeCluster(t, n)
	fc.setLeader(0)
	fc.clusterID, fc.generation = id.ClusterID, id.Generation
	return fc
}

func reserves(fcs ...*fakeCluster) int {
	n := 0
	for _, fc := range fcs {
		for i := range fc.nodes {
			n += fc.count(i, "ReserveSegment")
		}
	}
	return n
}

func stop(fc *fakeCluster) {
	for _, n := range fc.nodes {
		n.CloseClientConnections()
		n.Close()
	}
}

func shortCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	t.Cleanup(cancel)
	return ctx
}

// The client follows the highest (generation, cluster ID) among all its
// members, wherever the old cluster's members stand in the list.
func TestClientFollowsHighestGeneration(t *testing.T) {
	for _, oldFirst := range []bool{true, false} {
		old := identified(t, 2, Identity{0, "old"})
		restored := identified(t, 2, Identity{restoredAt, "restored"})
		urls := append(old.urls(), restored.urls()...)
		if !oldFirst {
			urls = append(restored.urls(), old.urls()...)
		}
		c := testClient(t, urls)
		s, err := c.ReserveSegment(testCtx(t), "t", 5, "r1")
		if err != nil || s.GetFirst() != 1 {
			t.Fatalf("old first %v: %v %v", oldFirst, s, err)
		}
		if n := reserves(old); n != 0 {
			t.Fatalf("old first %v: %d reservation(s) sent to the old cluster", oldFirst, n)
		}
		if got := c.Followed(); got != (Identity{restoredAt, "restored"}) {
			t.Fatalf("old first %v: following %v", oldFirst, got)
		}
		if f := c.FencedStores(); len(f) != 2 || f[0].ClusterID != "old" {
			t.Fatalf("old first %v: fenced %v, want the old cluster's two members", oldFirst, f)
		}
	}
}

// A cluster of another ID whose generation is not higher is never used:
// neither old members back after a restore (lower generation) nor a store
// rebuilt empty (a new ID at generation 0 beside a fresh cluster's 0).
// The calls fail as unavailable, the caller keeps its buffers.
func TestClientRefusesForeignClusterNotHigher(t *testing.T) {
	cases := []struct {
		name       string
		ours, them Identity
	}{
		{"old members back", Identity{restoredAt, "restored"}, Identity{0, "old"}},
		{"older restore", Identity{restoredAt, "restored"}, Identity{restoredAt - 1, "earlier"}},
		{"rebuilt empty", Identity{0, "first"}, Identity{0, "zzz-rebuilt"}},
		{"same generation", Identity{restoredAt, "a"}, Identity{restoredAt, "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ours := identified(t, 1, tc.ours)
			them := identified(t, 2, tc.them)
			them.down = true // it comes (back) after the client followed ours
			c := testClient(t, append(ours.urls(), them.urls()...))
			if _, err := c.ReserveSegment(testCtx(t), "t", 5, "r1"); err != nil {
				t.Fatal(err)
			}
			them.mu.Lock()
			them.down = false
			them.mu.Unlock()
			stop(ours)
			_, err := c.ReserveSegment(shortCtx(t), "t", 5, "r2")
			if !errors.Is(err, errs.Unavailable) {
				t.Fatalf("with only %v up: %v, want unavailable", tc.them, err)
			}
			if n := reserves(them); n != 0 {
				t.Fatalf("%d reservation(s) sent to %v", n, tc.them)
			}
			if got := c.Followed(); got != tc.ours {
				t.Fatalf("following %v, want %v", got, tc.ours)
			}
			if f := c.FencedStores(); len(f) != 2 || f[0].Identity != tc.them || c.FencedAnswers() == 0 {
				t.Fatalf("fenced %v (%d answers)", f, c.FencedAnswers())
			}
		})
	}
}

// A cluster of a higher generation appearing beside the followed one is
// taken over at the next survey and reported to the hooks once; the old
// cluster, whose leader still answers, gets no call from then on.
func TestClientTakesOverHigherGeneration(t *testing.T) {
	old := identified(t, 2, Identity{0, "old"})
	restored := identified(t, 2, Identity{restoredAt, "restored"})
	restored.down = true // not started yet
	c := testClient(t, append(old.urls(), restored.urls()...))
	var mu sync.Mutex
	var changes []string
	c.OnClusterChange(func(was, now string) {
		mu.Lock()
		defer mu.Unlock()
		changes = append(changes, was+"->"+now)
	})
	if _, err := c.ReserveSegment(testCtx(t), "t", 5, "r1"); err != nil || reserves(old) != 1 {
		t.Fatalf("before the restore: %v, %d reservation(s) on the old cluster", err, reserves(old))
	}
	restored.mu.Lock()
	restored.down, restored.leader = false, 1
	restored.mu.Unlock()
	if _, err := c.Survey(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if c.Leader() != restored.nodes[1].URL || c.Followed().ClusterID != "restored" {
		t.Fatalf("leader %q following %v, want the restored cluster's %q", c.Leader(), c.Followed(), restored.nodes[1].URL)
	}
	for i := range 3 {
		if s, err := c.ReserveSegment(testCtx(t), "t", 5, fmt.Sprint("r", i+2)); err != nil || s.GetFirst() != 1+5*int64(i) {
			t.Fatalf("after the takeover: %v %v", s, err)
		}
	}
	if n := reserves(old); n != 1 {
		t.Fatalf("%d reservation(s) on the old cluster after the takeover", n-1)
	}
	if f := c.FencedStores(); len(f) != 2 || f[0].ClusterID != "old" {
		t.Fatalf("fenced %v", f)
	}
	poll.Until(t, 10*time.Second, "the change hook", func() bool { mu.Lock(); defer mu.Unlock(); return len(changes) > 0 })
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(changes, []string{"old->restored"}) {
		t.Fatalf("changes %v", changes)
	}
}

// With a data dir the followed cluster survives a restart: a new client
// whose only reachable members are old ones refuses them. A newer format
// of the file is refused at start.
func TestClientRemembersFollowed(t *testing.T) {
	dir := t.TempDir()
	old := identified(t, 2, Identity{0, "old"})
	restored := identified(t, 1, Identity{restoredAt, "restored"})
	opts := Options{RequestTimeout: 10 * time.Second, BackoffInitial: time.Millisecond, BackoffMax: 10 * time.Millisecond, DataDir: dir}
	c, err := New(append(old.urls(), restored.urls()...), opts)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReserveSegment(testCtx(t), "t", 5, "r1"); err != nil {
		t.Fatal(err)
	}
	stop(restored)

	var changes []string
	var mu sync.Mutex
	c2, err := New(old.urls(), opts)
	if err != nil {
		t.Fatal(err)
	}
	c2.OnClusterChange(func(was, now string) { mu.Lock(); changes = append(changes, now); mu.Unlock() })
	if got := c2.Followed(); got != (Identity{restoredAt, "restored"}) {
		t.Fatalf("remembered %v", got)
	}
	if _, err := c2.ReserveSegment(shortCtx(t), "t", 5, "r2"); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("after a restart with only old members up: %v, want unavailable", err)
	}
	if n := reserves(old); n != 0 {
		t.Fatalf("%d reservation(s) on the old cluster", n)
	}
	mu.Lock()
	if len(changes) != 0 {
		t.Fatalf("changes %v", changes)
	}
	mu.Unlock()

	if err := durable.Write(filepath.Join(dir, followedFile), followedVersion+1, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(old.urls(), opts); !errors.Is(err, durable.ErrNewerFormat) {
		t.Fatalf("newer file format: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, followedFile), []byte("seqsvr-format 1\nnot json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := New(old.urls(), opts); err == nil {
		t.Fatal("an unreadable file was taken for no memory")
	}
}

func TestJudge(t *testing.T) {
	none, a0, b0, a5, b5, b9 := Identity{}, Identity{0, "a"}, Identity{0, "b"}, Identity{5, "a"}, Identity{5, "b"}, Identity{9, "b"}
	for _, tc := range []struct {
		ours, theirs Identity
		want         verdict
	}{
		{none, a0, usable}, {none, none, usable}, {a0, none, anonymous},
		{a0, a0, usable}, {a5, a0, usable}, // the same cluster, its generation dropped by a base-release member
		{a0, b0, fenced}, {a5, b5, fenced}, {b9, a5, fenced},
		{a0, b5, newer}, {a5, b9, newer},
	} {
		if got := judge(tc.ours, tc.theirs); got != tc.want {
			t.Errorf("judge(%v, %v) = %d, want %d", tc.ours, tc.theirs, got, tc.want)
		}
	}
	if !slices.Equal([]bool{b5.above(a5), a5.above(b5), a5.above(b0)}, []bool{true, false, true}) {
		t.Error("order")
	}
}

// An old member at the address of the followed cluster's leader (a pod
// back on its old volume) is refused as soon as a ClusterStatus answer
// shows it, and the leader is looked up again among the others.
func TestClientRefusesOldClusterAtSameAddress(t *testing.T) {
	fc := identified(t, 2, Identity{restoredAt, "restored"})
	c := testClient(t, fc.urls())
	if _, err := c.ReserveSegment(testCtx(t), "t", 5, "r1"); err != nil {
		t.Fatal(err)
	}
	fc.mu.Lock()
	fc.clusterID, fc.generation = "old", 0
	fc.mu.Unlock()
	if cs, err := c.ClusterStatus(shortCtx(t)); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("ClusterStatus of an old member at the leader's address: %v %v, want unavailable", cs, err)
	}
	before := reserves(fc)
	if _, err := c.ReserveSegment(shortCtx(t), "t", 5, "r2"); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("reserve: %v, want unavailable", err)
	}
	if n := reserves(fc) - before; n != 0 {
		t.Fatalf("%d reservation(s) on the old cluster", n)
	}
}

// A leader address that answers as an old cluster is not called, even
// while the followed cluster's other members still name it as leader.
func TestClientSkipsFencedLeaderAddress(t *testing.T) {
	fc := identified(t, 3, Identity{restoredAt, "restored"})
	c := testClient(t, fc.urls())
	if _, err := c.ReserveSegment(testCtx(t), "t", 5, "r1"); err != nil {
		t.Fatal(err)
	}
	fc.mu.Lock()
	fc.identity = map[int]Identity{0: {0, "old"}} // the leader's address: an old member now
	fc.mu.Unlock()
	if _, err := c.Survey(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	before := fc.count(0, "ReserveSegment")
	if _, err := c.ReserveSegment(shortCtx(t), "t", 5, "r2"); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("reserve: %v, want unavailable", err)
	}
	if n := fc.count(0, "ReserveSegment") - before; n != 0 {
		t.Fatalf("%d reservation(s) sent to the old member at the named leader's address", n)
	}
}

// A fenced member that stops answering (an old member stopped for good)
// is no longer listed once forgetFencedAfter whole surveys in a row went
// unanswered, and is fenced again at its first answer as the old
// cluster: the listing follows what answers, the fence does not weaken.
func TestClientForgetsSilentFencedMember(t *testing.T) {
	ours := identified(t, 1, Identity{restoredAt, "restored"})
	old := identified(t, 1, Identity{0, "old"})
	c := testClient(t, append(ours.urls(), old.urls()...))
	if _, err := c.Survey(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if f := c.FencedStores(); len(f) != 1 {
		t.Fatalf("fenced %v, want the old member", f)
	}
	old.mu.Lock()
	old.down = true
	old.mu.Unlock()
	for i := 1; i <= forgetFencedAfter; i++ {
		if f := c.FencedStores(); len(f) != 1 {
			t.Fatalf("after %d silent survey(s) fenced %v, want the old member still listed", i-1, f)
		}
		if _, err := c.Survey(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if f := c.FencedStores(); len(f) != 0 {
		t.Fatalf("after %d silent surveys fenced %v, want none", forgetFencedAfter, f)
	}
	old.mu.Lock()
	old.down = false
	old.mu.Unlock()
	if _, err := c.Survey(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if f := c.FencedStores(); len(f) != 1 || f[0].Identity != (Identity{0, "old"}) {
		t.Fatalf("back as the old cluster: fenced %v, want it again", f)
	}
	if n := reserves(old); n != 0 {
		t.Fatalf("%d reservation(s) sent to the old member", n)
	}
	if got := c.Followed(); got != (Identity{restoredAt, "restored"}) {
		t.Fatalf("following %v", got)
	}
}
