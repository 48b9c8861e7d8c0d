package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

// TestRecoverRefusedUnlessPeersGone: in a secure cluster (TLS on the API
// and Raft, tokens), --recover on s1 is refused while s2 and s3 run,
// whatever s1's flags: without the TLS flags, with another CA, with the
// right flags, and with --recover-lost naming them; each refusal names
// both and leaves s1's data as it was (s1 rejoins its cluster). With s2
// and s3 stopped, it is refused until --recover-lost names both, then
// s1 runs alone as a new cluster with the data.
func TestRecoverRefusedUnlessPeersGone(t *testing.T) {
	launchtest.SkipShort(t)
	dir := t.TempDir()
	sec, err := launch.NewSecurity(filepath.Join(dir, "sec"))
	if err != nil {
		t.Fatal(err)
	}
	c := launchtest.Start(t, launch.Options{Dir: dir, Stores: 3, Security: sec})
	ctx := launchtest.Context(t, 3*time.Minute)
	launchtest.CreateTag(t, c, "kept", 1)
	before, err := c.Status(ctx, c.Stores[1])
	if err != nil {
		t.Fatal(err)
	}
	s1 := c.Stores[0]
	if err := s1.Kill(); err != nil {
		t.Fatal(err)
	}
	secure := slices.Clone(s1.ExtraArgs)
	peers := s1.Peers
	s1.Peers = ""
	wrongCA := tlstest.NewCA(t).CertFile
	var wrong []string
	for _, a := range secure {
		if a == sec.CAFile {
			a = wrongCA
		}
		wrong = append(wrong, a)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"no TLS flags", []string{"--recover"}, []string{"answer", "s2 (", "s3 ("}},
		{"wrong CA", append(slices.Clone(wrong), "--recover"), []string{"answer", "s2 (", "s3 (", "certificate"}},
		{"right flags", append(slices.Clone(secure), "--recover"), []string{"answer", "s2 (", "s3 (", "200 OK"}},
		{"lost named", append(slices.Clone(secure), "--recover", "--recover-lost", "s2,s3"), []string{"answer", "s2 (", "s3 (", "[named by --recover-lost]"}},
	} {
		log := refusedRun(ctx, t, s1, tc.args)
		for _, w := range tc.want {
			if !strings.Contains(log, w) {
				t.Fatalf("%s: --recover with s2 and s3 alive: the refusal lacks %q:\n%s", tc.name, w, log)
			}
		}
	}
	// Nothing was rewritten: s1 rejoins its cluster as it was.
	s1.ExtraArgs, s1.Peers = secure, peers
	if err := s1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, s1); err != nil {
		t.Fatal(err)
	}
	poll.UntilCtx(ctx, t, "s1 back in its cluster", func() bool {
		st, err := c.Status(ctx, s1)
		return err == nil && st.GetClusterId() == before.GetClusterId() && st.GetLeaderId() != "" && len(st.GetMembers()) == 3
	})

	for _, p := range c.Stores {
		if err := p.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	s1.Peers = ""
	log := refusedRun(ctx, t, s1, append(slices.Clone(secure), "--recover"))
	for _, w := range []string{"cannot be reached", "s2 (", "s3 (", "connection refused", "--recover-lost s2,s3"} {
		if !strings.Contains(log, w) {
			t.Fatalf("--recover with s2 and s3 stopped, none named lost: the refusal lacks %q:\n%s", w, log)
		}
	}
	log = refusedRun(ctx, t, s1, append(slices.Clone(secure), "--recover", "--recover-lost", "s2"))
	if !strings.Contains(log, "s3 (") || strings.Contains(log, "s2 (") {
		t.Fatalf("--recover-lost s2 with s3 stopped too: want a refusal naming s3 alone:\n%s", log)
	}
	s1.ExtraArgs = append(slices.Clone(secure), "--recover", "--recover-lost", "s2,s3")
	if err := s1.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitReady(ctx, s1); err != nil {
		t.Fatal(err)
	}
	poll.UntilCtx(ctx, t, "s1 to lead a one-member cluster of its own", func() bool {
		st, err := c.Status(ctx, s1)
		return err == nil && st.GetLeaderId() == "s1" && len(st.GetMembers()) == 1 && st.GetClusterId() != before.GetClusterId()
	})
	if _, err := c.StoreClient(s1).GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "kept"})); err != nil {
		t.Fatalf("the recovered cluster lacks the tag: %v", err)
	}
}

// refusedRun starts p with args, waits for it to exit and returns what it
// logged in that run.
func refusedRun(ctx context.Context, t *testing.T, p *launch.Proc, args []string) string {
	t.Helper()
	old, _ := os.ReadFile(p.LogPath)
	p.ExtraArgs = args
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// A recovery that goes ahead keeps running.
	poll.UntilCtx(wait, t, p.Name+" to exit, refusing the recovery", func() bool { return !p.Running() })
	b, _ := os.ReadFile(p.LogPath)
	if p.ExitErr() == nil {
		t.Fatalf("%s %v exited 0:\n%s", p.Name, args, b[len(old):])
	}
	return string(b[len(old):])
}
