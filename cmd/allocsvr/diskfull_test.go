package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// An allocsvr whose data dir (a small tmpfs) fills stops serving snowflake
// IDs (unavailable, naming the data dir), says so in Status and its log,
// and serves again, IDs still increasing, once space is back, without a
// restart. Segment IDs, which need no local disk, keep being served.
func TestSnowflakeStopsWhenDataDirFull(t *testing.T) {
	launchtest.SkipShort(t)
	c, err := launch.New(launch.Options{BinDir: launchtest.BinDir(t), Dir: t.TempDir(), Stores: 1, Allocs: 1, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	a := c.Allocs[0]
	launchtest.Tmpfs(t, a.DataDir, 1<<20)
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			if b, err := os.ReadFile(a.LogPath); err == nil {
				t.Logf("---- %s log (tail) ----\n%s", a.Name, b[max(0, len(b)-4000):])
			}
		}
	})
	ctx := launchtest.Context(t, 2*time.Minute)
	if err := c.Launch(ctx); err != nil {
		t.Fatal(err)
	}
	launchtest.CreateTag(t, c, "seg", 100)
	before := waitSnowflake(t, c, a)
	cl := c.AllocClient(a)

	if _, _, err := launch.Fill(a.DataDir); err != nil {
		t.Fatal(err)
	}
	// The mark made durable before covers about a second; past it, or at
	// the first failed extension, IDs stop.
	fullCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var refused error
	poll.UntilCtx(fullCtx, t, "snowflake IDs refused naming the data dir", func() bool {
		_, refused = snowIDs(ctx, cl, 1)
		time.Sleep(20 * time.Millisecond)
		return connect.CodeOf(refused) == connect.CodeUnavailable && strings.Contains(refused.Error(), a.DataDir)
	})
	t.Logf("refused: %v", refused)
	st, err := cl.Status(ctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if sf := st.Msg.GetSnowflake(); !sf.GetFenced() || !strings.Contains(sf.GetReason(), "high-water mark") || !strings.Contains(sf.GetReason(), a.DataDir) {
		t.Fatalf("Status while full: fenced=%v reason=%q", sf.GetFenced(), sf.GetReason())
	}
	if b, _ := os.ReadFile(a.LogPath); !strings.Contains(string(b), "cannot write the snowflake high-water mark") {
		t.Fatal("the log does not say the high-water mark cannot be written")
	}
	if _, err := cl.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "seg"})); err != nil {
		t.Fatalf("segment IDs while the allocsvr's disk is full: %v", err)
	}

	if err := launch.Unfill(a.DataDir); err != nil {
		t.Fatal(err)
	}
	pid := a.Pid()
	after := waitSnowflake(t, c, a)
	if after[0] <= before[0] {
		t.Fatalf("after space came back: %d, before %d", after[0], before[0])
	}
	if a.Pid() != pid || a.Starts() != 1 {
		t.Fatalf("the allocsvr restarted (pid %d -> %d, starts %d)", pid, a.Pid(), a.Starts())
	}
	poll.UntilCtx(ctx, t, "Status to show serving", func() bool {
		st, err := cl.Status(ctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
		return err == nil && !st.Msg.GetSnowflake().GetFenced()
	})
}
