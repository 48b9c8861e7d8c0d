package main

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

// TestRaftTLSJoinThroughFollower: members on hosts of their own
// (127.0.0.11 to .14), each with a Raft certificate naming only itself
// (its ID and host). A fourth member joins through a follower: the
// leader that adds it names neither the join target nor anything the new
// member was started with, so the new member learns the members from its
// join target before it lets the leader in. It catches up, and a member
// it never heard of before the join is refused nothing.
func TestRaftTLSJoinThroughFollower(t *testing.T) {
	launchtest.SkipShort(t)
	ln, err := net.Listen("tcp", "127.0.0.11:0")
	if err != nil {
		t.Skipf("no loopback address 127.0.0.11: %v", err)
	}
	ln.Close()
	ca := tlstest.NewCA(t)
	c, err := launch.New(launch.Options{
		BinDir: launchtest.BinDir(t), Dir: t.TempDir(), Stores: 4, Logf: t.Logf,
		Host:          func(name string) string { return "127.0.0.1" + name[1:] },
		StoreHTTPBase: 1, StoreRaftBase: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	for _, s := range c.Stores {
		host, _, _ := net.SplitHostPort(s.HTTPAddr)
		// Ports from the shared pool, on this member's own address.
		hp, err := launch.FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		rp, err := launch.FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		s.HTTPAddr, s.RaftAddr = net.JoinHostPort(host, strconv.Itoa(hp)), net.JoinHostPort(host, strconv.Itoa(rp))
		cert, key := ca.Issue(t, s.NodeID, s.NodeID, host)
		s.ExtraArgs = append(s.ExtraArgs, "--raft-tls-cert", cert, "--raft-tls-key", key, "--raft-tls-ca", ca.CertFile)
	}
	peers := launch.PeersFlag(c.Stores[:3])
	ctx := launchtest.Context(t, time.Minute)
	for _, s := range c.Stores[:3] {
		s.Peers = peers
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "before", Step: 1}); err != nil {
		t.Fatal(err)
	}
	var follower *launch.Proc
	for _, s := range c.Stores[:3] {
		if s != leader {
			follower = s
			break
		}
	}
	s4 := c.Stores[3]
	s4.Join = follower.HTTPAddr
	if err := s4.Start(ctx); err != nil {
		t.Fatal(err)
	}
	poll.UntilCtx(ctx, t, fmt.Sprintf("s4, joining through %s, to hold the tag written before it joined (leader %s)", follower.Name, leader.Name), func() bool {
		_, err := c.StoreClient(s4).GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "before", Local: true}))
		return err == nil
	})
}
