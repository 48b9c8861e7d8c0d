package nemesis

import (
	"context"
	"math/rand"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// The operator fault against a secure cluster: it must delete the tag and
// re-create it above every ID handed out before, so IDs after it are
// above all IDs before it; a client without token or CA gets nothing.
func TestOperatorSecure(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: real-process test")
	}
	dir := t.TempDir()
	sec, err := launch.NewSecurity(filepath.Join(dir, "tls"))
	if err != nil {
		t.Fatal(err)
	}
	c := launchtest.Start(t, launch.Options{Dir: dir, Stores: 3, Allocs: 1, Security: sec})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const tag = "ids-0"
	if err := c.CreateTag(ctx, &seqsvrv1.CreateTagRequest{Tag: tag, Step: 50}); err != nil {
		t.Fatal(err)
	}
	a := c.Allocs[0]
	if !strings.HasPrefix(a.URL(), "https://") {
		t.Fatalf("alloc URL %s, want https", a.URL())
	}
	// Secure mode is on: no token, no answer (and plain HTTP fails the
	// handshake).
	bare := seqsvrv1connect.NewAllocServiceClient(http.DefaultClient, "http://"+a.HTTPAddr)
	if _, err := bare.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: tag, Count: 1})); err == nil {
		t.Fatal("a plain client without token got IDs from a secure allocsvr")
	}

	next := func() []int64 {
		t.Helper()
		for {
			resp, err := c.AllocClient(a).NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: tag, Count: 20}))
			if err == nil {
				return resp.Msg.GetIds()
			}
			if ctx.Err() != nil {
				t.Fatalf("NextIDs: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	var highest int64
	for range 5 {
		ids := next()
		highest = max(highest, ids[len(ids)-1])
	}

	var out strings.Builder
	log := NewLog(time.Now(), &out)
	e := &Env{C: c, Log: log, ElectionTimeout: time.Second, OperatorTags: []string{tag}}
	if err := operator(ctx, e, rand.New(rand.NewSource(1))); err != nil {
		t.Fatal(err)
	}
	t.Logf("nemesis log:\n%s", out.String())
	var injected, healed bool
	for _, ev := range log.Events() {
		switch ev.Phase {
		case "inject":
			injected = true
		case "heal":
			healed = true
		case "error", "skip":
			t.Fatalf("operator %s: %s", ev.Phase, ev.Detail)
		}
	}
	if !injected || !healed {
		t.Fatalf("operator injected=%v healed=%v", injected, healed)
	}
	// The allocsvr drops the old life's buffers within ~5 s; every ID it
	// hands out, before and after that, is above all IDs of before the
	// delete.
	deadline := time.Now().Add(8 * time.Second)
	for time.Now().Before(deadline) {
		ids := next()
		if ids[0] <= highest {
			t.Fatalf("after the re-create: id %d <= %d handed out before", ids[0], highest)
		}
		highest = ids[len(ids)-1]
		time.Sleep(200 * time.Millisecond)
	}
}
