package main

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// A leader stopped with SIGTERM hands leadership over before it exits:
// its log names the member it handed to; that member won the very next
// term, by the transfer (no member's election timer fired); it leads
// before the old leader's process has exited, so a write sent to it the
// moment the old one is gone succeeds at the first attempt.
func TestGracefulStopHandsOver(t *testing.T) {
	c, ctx, leader, _ := threeStores(t, nil, 60*time.Second)
	createTag(t, c, leader, "handover", 1)
	before, err := c.Status(ctx, leader)
	if err != nil {
		t.Fatal(err)
	}
	from := map[*launch.Proc]int64{}
	for _, s := range c.Stores {
		from[s] = logSize(t, s)
	}

	if err := leader.Stop(); err != nil {
		t.Fatal(err)
	}
	var next *launch.Proc
	for _, s := range c.Stores {
		if s == leader {
			continue
		}
		st, err := c.Status(ctx, s)
		if err != nil {
			t.Fatalf("status of %s right after the leader exited: %v", s.Name, err)
		}
		if st.GetLeaderId() == s.NodeID {
			next = s
		}
	}
	if next == nil {
		t.Fatalf("no member led the moment the old leader %s had exited", leader.NodeID)
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := c.StoreClient(next).ReserveSegment(wctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "handover"})); err != nil {
		t.Fatalf("first write at the new leader %s: %v", next.NodeID, err)
	}

	old := logSince(t, leader, from[leader])
	term := before.GetTerm() + 1
	if !logHas(old, `msg="leadership handed over" .*leader=%s term=%d `, next.NodeID, term) {
		t.Fatalf("the old leader's log does not hand over to %s in term %d:\n%s", next.NodeID, term, old)
	}
	if l := logSince(t, next, from[next]); !logHas(l, `msg="election won" .*term=%d `, term) {
		t.Fatalf("%s did not win term %d:\n%s", next.NodeID, term, l)
	}
	for _, s := range c.Stores {
		if l := logSince(t, s, from[s]); strings.Contains(l, "heartbeat timeout reached") {
			t.Fatalf("%s's election timer fired: the stop cost an election:\n%s", s.NodeID, l)
		}
	}
}

// logHas reports whether a line of log matches the pattern format
// (a regexp once args are filled in).
func logHas(log, format string, args ...any) bool {
	return regexp.MustCompile(fmt.Sprintf(format, args...)).MatchString(log)
}

// logSize is how long p's log is now.
func logSize(t *testing.T, p *launch.Proc) int64 {
	t.Helper()
	fi, err := os.Stat(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// logSince is what p logged after the first off bytes.
func logSince(t *testing.T, p *launch.Proc, off int64) string {
	t.Helper()
	b, err := os.ReadFile(p.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[min(off, int64(len(b))):])
}

// --handover-on-stop=false turns the transfer off: the leader just stops,
// and the others elect a new one once their election timer fires.
func TestHandoverOnStopOff(t *testing.T) {
	c, ctx, leader, _ := threeStores(t, []string{"--handover-on-stop=false"}, 60*time.Second)
	from := map[*launch.Proc]int64{}
	for _, s := range c.Stores {
		from[s] = logSize(t, s)
	}
	if err := leader.Stop(); err != nil {
		t.Fatal(err)
	}
	if l := logSince(t, leader, from[leader]); strings.Contains(l, "handing leadership over") {
		t.Fatalf("the leader handed over with --handover-on-stop=false:\n%s", l)
	}
	poll.UntilCtx(ctx, t, "an election after the leader stopped", func() bool {
		for _, s := range c.Stores {
			if s != leader && strings.Contains(logSince(t, s, from[s]), "heartbeat timeout reached") {
				return true
			}
		}
		return false
	})
}
