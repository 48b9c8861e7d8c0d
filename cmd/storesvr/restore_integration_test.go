package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/storage/backup"
)

// usage is what the lost cluster handed out: the largest segment ID and
// per-key value seen, and the cluster ID.
type usage struct {
	maxID, maxSeq int64
	clusterID     string
}

// use takes IDs and per-key values from the cluster's first allocsvr.
func use(ctx context.Context, t *testing.T, c *launch.Cluster, u *usage, rounds int) {
	t.Helper()
	alloc, seq := c.AllocClient(c.Allocs[0]), c.SeqClient(c.Allocs[0])
	for range rounds {
		var res *connect.Response[seqsvrv1.NextIDsResponse]
		if err := errs.Retry(ctx, launchtest.Retry(errs.AllocCall), func(context.Context, int) (err error) {
			res, err = alloc.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order", Count: 100}))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		u.maxID = max(u.maxID, slicesMax(res.Msg.GetIds()))
		var sres *connect.Response[seqsvrv1.NextSeqResponse]
		if err := errs.Retry(ctx, launchtest.Retry(errs.AllocCall), func(context.Context, int) (err error) {
			sres, err = seq.NextSeq(ctx, connect.NewRequest(&seqsvrv1.NextSeqRequest{Space: "chat", Key: 7}))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		u.maxSeq = max(u.maxSeq, sres.Msg.GetSeq())
	}
}

func slicesMax(ids []int64) int64 {
	var m int64
	for _, id := range ids {
		m = max(m, id)
	}
	return m
}

// takeBackup streams a backup from store p into a file.
func takeBackup(ctx context.Context, t *testing.T, c *launch.Cluster, p *launch.Proc, path string) *seqsvrv1.Backup {
	t.Helper()
	stream, err := c.StoreClient(p).Backup(ctx, connect.NewRequest(&seqsvrv1.BackupRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	for stream.Receive() {
		buf.Write(stream.Msg().GetData())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	b, err := backup.Decode(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return b
}

// wantAbove checks the new cluster continues above everything the lost
// one handed out, with another cluster ID, a snowflake worker granted
// only after the old leases ended, and the jump in s1's log.
func wantAbove(ctx context.Context, t *testing.T, c *launch.Cluster, lost usage, since time.Time) {
	t.Helper()
	alloc := c.AllocClient(c.Allocs[0])
	var res *connect.Response[seqsvrv1.NextIDsResponse]
	if err := errs.Retry(ctx, launchtest.Retry(errs.AllocCall), func(context.Context, int) (err error) {
		res, err = alloc.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order", Count: 1}))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	first := res.Msg.GetIds()[0]
	t.Logf("first ID served %v after the restore began (three stores and the allocsvr started)", time.Since(since).Round(time.Millisecond))
	var after usage
	use(ctx, t, c, &after, 1)
	if first <= lost.maxID || after.maxSeq <= lost.maxSeq {
		t.Fatalf("after the restore: ID %d, per-key %d; the lost cluster handed out up to %d and %d", first, after.maxSeq, lost.maxID, lost.maxSeq)
	}
	st, err := c.Status(ctx, c.Stores[0])
	if err != nil || st.GetClusterId() == "" || st.GetClusterId() == lost.clusterID || len(st.GetMembers()) != 3 {
		t.Fatalf("status %v %v: want 3 members and a new cluster ID (old %s)", st, err, lost.clusterID)
	}
	// The new cluster's generation is the restore's start (Unix ms), and
	// its backups carry it.
	if g := st.GetGeneration(); g < since.UnixMilli() || g > time.Now().UnixMilli() {
		t.Fatalf("generation %d, want the restore's start, between %d and now", g, since.UnixMilli())
	}
	if b := takeBackup(ctx, t, c, c.Stores[1], filepath.Join(t.TempDir(), "new.backup")); b.GetGeneration() != st.GetGeneration() || b.GetState().GetGeneration() != st.GetGeneration() {
		t.Fatalf("backup of the new cluster: generation %d (state %d), want %d", b.GetGeneration(), b.GetState().GetGeneration(), st.GetGeneration())
	}
	var sf *connect.Response[seqsvrv1.NextSnowflakeIDsResponse]
	poll.UntilCtx(ctx, t, "a snowflake ID", func() bool {
		sf, err = alloc.NextSnowflakeIDs(ctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{Count: 1}))
		return err == nil
	})
	dec, err := alloc.DecodeSnowflake(ctx, connect.NewRequest(&seqsvrv1.DecodeSnowflakeRequest{Id: sf.Msg.GetIds()[0]}))
	if err != nil || dec.Msg.GetTimestampMs() < since.UnixMilli() {
		t.Fatalf("snowflake %v %v: want a timestamp after the restore began (%d)", dec, err, since.UnixMilli())
	}
	log, _ := os.ReadFile(c.Stores[0].LogPath)
	if !strings.Contains(string(log), "jump order: max_id") {
		t.Fatalf("no jump logged for tag order in %s", c.Stores[0].LogPath)
	}
	t.Logf("lost cluster up to ID %d, per-key %d; new cluster from %d, per-key %d", lost.maxID, lost.maxSeq, first, after.maxSeq)
}

func startLost(ctx context.Context, t *testing.T) (*launch.Cluster, *usage) {
	t.Helper()
	old := launchtest.StartCluster(t, 3, 1, nil, nil)
	if err := old.CreateTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "order", Step: 100}); err != nil {
		t.Fatal(err)
	}
	if err := old.CreateSpace(ctx, &seqsvrv1.CreateSpaceRequest{Space: "chat", KeyCount: 1000, SectionSize: 100, Step: 10}); err != nil {
		t.Fatal(err)
	}
	u := &usage{}
	st, err := old.Status(ctx, old.Stores[0])
	if err != nil {
		t.Fatal(err)
	}
	u.clusterID = st.GetClusterId()
	seq := old.SeqClient(old.Allocs[0])
	poll.UntilCtx(ctx, t, "the allocsvr to serve the new space", func() bool {
		_, err := seq.CurrentSeqs(ctx, connect.NewRequest(&seqsvrv1.CurrentSeqsRequest{Space: "chat", Keys: []uint64{7}}))
		return err == nil
	})
	use(ctx, t, old, u, 5)
	return old, u
}

// layout lays out a cluster of three stores and an allocsvr without
// starting it; Close runs when the test ends.
func layout(t *testing.T) *launch.Cluster {
	t.Helper()
	c, err := launch.New(launch.Options{BinDir: launchtest.BinDir(t), Dir: t.TempDir(), Stores: 3, Allocs: 1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			for _, p := range c.All() {
				if b, err := os.ReadFile(p.LogPath); err == nil {
					t.Logf("---- %s log (tail) ----\n%s", p.Name, b[max(0, len(b)-4000):])
				}
			}
		}
	})
	return c
}

// startJoined starts s1 (already given its flags), then s2 and s3 joining
// it with empty data dirs, then the allocsvr.
func startJoined(ctx context.Context, t *testing.T, c *launch.Cluster) {
	t.Helper()
	startStores(ctx, t, c)
	for _, a := range c.Allocs {
		if err := a.Start(ctx); err != nil {
			t.Fatal(err)
		}
		if err := c.WaitReady(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
}

// startStores starts s1 (already given its flags), then s2 and s3 joining
// it with empty data dirs.
func startStores(ctx context.Context, t *testing.T, c *launch.Cluster) {
	t.Helper()
	s1 := c.Stores[0]
	began := time.Now()
	if err := s1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, s1); err != nil {
		t.Fatal(err)
	}
	t.Logf("s1 ready %v after its start", time.Since(began).Round(time.Millisecond))
	for _, s := range c.Stores[1:] {
		s.Peers, s.Join = "", s1.HTTPAddr
		if err := os.RemoveAll(s.DataDir); err != nil {
			t.Fatal(err)
		}
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range c.Stores[1:] {
		if err := c.WaitReady(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
}

// A backup of a 3-member cluster under use, restored into a fresh
// cluster with the default jump: IDs and per-key values continue above
// everything the lost cluster handed out, also after the backup.
func TestRestoreFromBackup(t *testing.T) {
	launchtest.SkipShort(t)
	ctx := launchtest.Context(t, 3*time.Minute)
	old, lost := startLost(ctx, t)
	file := filepath.Join(t.TempDir(), "seqsvr.backup")
	b := takeBackup(ctx, t, old, old.Stores[2], file)
	if b.GetClusterId() != lost.clusterID || len(b.GetState().GetTags()) != 1 {
		t.Fatalf("backup of cluster %s with tags %v", b.GetClusterId(), b.GetState().GetTags())
	}
	// What the lost cluster hands out after the backup is not in it.
	use(ctx, t, old, lost, 20)
	old.Close()

	c := layout(t)
	s1 := c.Stores[0]
	s1.Peers = ""
	s1.ExtraArgs = append(s1.ExtraArgs, "--restore", file)
	since := time.Now()
	startJoined(ctx, t, c)
	wantAbove(ctx, t, c, *lost, since)
	// A restart with the same command line starts from the data dir.
	if err := s1.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := s1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, s1); err != nil {
		t.Fatal(err)
	}
}

// Quorum loss: --recover is refused while another member answers, naming
// it; once the others are gone it continues alone from the survivor's
// data with the jump, and fresh members join it.
func TestRecoverAfterQuorumLoss(t *testing.T) {
	launchtest.SkipShort(t)
	ctx := launchtest.Context(t, 3*time.Minute)
	c, lost := startLost(ctx, t)
	s1 := c.Stores[0]
	if err := s1.Kill(); err != nil {
		t.Fatal(err)
	}
	s1.Peers = ""
	s1.ExtraArgs = append(s1.ExtraArgs, "--recover")
	if err := s1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	poll.UntilCtx(ctx, t, "the refused --recover to exit", func() bool { return !s1.Running() })
	log, _ := os.ReadFile(s1.LogPath)
	if !strings.Contains(string(log), "s2 (") || !strings.Contains(string(log), "s3 (") {
		t.Fatalf("--recover with live peers: exit %v, and the log does not name both s2 and s3", s1.ExitErr())
	}
	use(ctx, t, c, lost, 3) // the two others still serve: nothing was split
	for _, p := range append(c.Stores[1:], c.Allocs...) {
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	s1.ExtraArgs = append(s1.ExtraArgs, "--recover-lost", "s2,s3") // stopped: only the operator can say they are gone
	since := time.Now()
	startJoined(ctx, t, c)
	wantAbove(ctx, t, c, *lost, since)
}

// An allocsvr that stays up while its whole store is destroyed and
// restored from a backup on the same addresses takes over: it notices the
// new cluster ID, gives up its snowflake worker lease and per-key
// sections, registers again, and keeps the segment buffers it held.
// Nothing it hands out afterwards is at or below what it handed out
// before.
func TestAllocsvrTakesOverAfterRestore(t *testing.T) {
	launchtest.SkipShort(t)
	ctx := launchtest.Context(t, 3*time.Minute)
	c, lost := startLost(ctx, t)
	a := c.Allocs[0]
	alloc := c.AllocClient(a)
	file := filepath.Join(t.TempDir(), "seqsvr.backup")
	takeBackup(ctx, t, c, c.Stores[1], file)
	use(ctx, t, c, lost, 10)
	sfBefore, err := alloc.NextSnowflakeIDs(ctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{Count: 1}))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Stores {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
		if err := s.Wipe(); err != nil {
			t.Fatal(err)
		}
	}
	s1 := c.Stores[0]
	s1.Peers = ""
	s1.ExtraArgs = append(s1.ExtraArgs, "--restore", file)
	startStores(ctx, t, c)
	st, err := c.Status(ctx, s1)
	if err != nil || st.GetClusterId() == lost.clusterID {
		t.Fatalf("restored store: %v %v, want a new cluster ID", st, err)
	}
	poll.UntilCtx(ctx, t, "the allocsvr to report the new cluster ID", func() bool {
		res, err := alloc.Status(ctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
		return err == nil && res.Msg.GetClusterId() == st.GetClusterId()
	})
	poll.UntilCtx(ctx, t, "the takeover counted in /metrics", func() bool {
		return strings.Contains(metricsOf(ctx, t, c, a), "seqsvr_alloc_store_cluster_changes_total 1\n")
	})
	var after usage
	use(ctx, t, c, &after, 3)
	var sf *connect.Response[seqsvrv1.NextSnowflakeIDsResponse]
	poll.UntilCtx(ctx, t, "a snowflake ID from the new registration", func() bool {
		sf, err = alloc.NextSnowflakeIDs(ctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{Count: 1}))
		return err == nil
	})
	if after.maxID <= lost.maxID || after.maxSeq <= lost.maxSeq || sf.Msg.GetIds()[0] <= sfBefore.Msg.GetIds()[0] {
		t.Fatalf("after the takeover: ID %d, per-key %d, snowflake %d; before: %d, %d, %d",
			after.maxID, after.maxSeq, sf.Msg.GetIds()[0], lost.maxID, lost.maxSeq, sfBefore.Msg.GetIds()[0])
	}
	// The takeover, not a failed renewal, gave the lease and sections up.
	log, _ := os.ReadFile(a.LogPath)
	change := "the store's cluster ID changed from " + lost.clusterID + " to " + st.GetClusterId()
	for _, want := range []string{"snowflake worker lease lost", "seq heartbeats failing"} {
		if grepLines(string(log), want, change) == "" {
			t.Errorf("allocsvr log has no %q line naming %q", want, change)
		}
	}
	if n := strings.Count(string(log), "snowflake worker registered"); n < 2 {
		t.Errorf("allocsvr log: the snowflake worker registered %d times, want again after the restore", n)
	}
}

// metricsOf is p's /metrics page.
func metricsOf(ctx context.Context, t *testing.T, c *launch.Cluster, p *launch.Proc) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.HTTPClient().Do(req)
	if err != nil {
		return ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// grepLines is the lines of s that contain every one of subs.
func grepLines(s string, subs ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		all := true
		for _, sub := range subs {
			all = all && strings.Contains(l, sub)
		}
		if all {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
