package main

import (
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/raftconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
)

// TestRaftRefusesClientCertificate forges Raft RPCs the way an attacker
// holding the allocsvr's client certificate (signed by the cluster's CA,
// naming no member) would: hashicorp/raft's NetworkTransport over TLS,
// AppendEntries claiming to come from the leader with a CreateTag entry,
// and a RequestVote of a far higher term, to each member of a real
// 3-member cluster running Raft over mutual TLS. Every member refuses the
// connection at the handshake, no forged tag exists on any member, no
// term moved; the members' own certificate still passes the handshake and
// the cluster keeps running.
func TestRaftRefusesClientCertificate(t *testing.T) {
	launchtest.SkipShort(t)
	dir := t.TempDir()
	sec, err := launch.NewSecurity(dir + "/sec")
	if err != nil {
		t.Fatal(err)
	}
	c := launchtest.Start(t, launch.Options{Dir: dir, Stores: 3, Allocs: 1, Security: sec})
	ctx := launchtest.Context(t, 90*time.Second)
	leader := launchtest.Leader(t, c)
	launchtest.CreateTag(t, c, "real", 1)
	st, err := c.Status(ctx, leader)
	if err != nil {
		t.Fatal(err)
	}
	term, commit := st.GetTerm(), st.GetCommitIndex()

	forger := transport(t, sec.AllocCertFile, sec.AllocKeyFile, sec.CAFile)
	forged, err := proto.Marshal(&seqsvrv1.Command{NowMs: time.Now().UnixMilli(),
		Cmd: &seqsvrv1.Command_CreateTag{CreateTag: &seqsvrv1.CreateTagCommand{Tag: "forged", Step: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(leader.NodeID), Addr: []byte(leader.RaftAddr)}
	for _, m := range c.Stores {
		var aeResp raft.AppendEntriesResponse
		err := forger.AppendEntries(raft.ServerID(m.NodeID), raft.ServerAddress(m.RaftAddr), &raft.AppendEntriesRequest{
			RPCHeader: header, Term: term, PrevLogEntry: commit, PrevLogTerm: term,
			Entries:           []*raft.Log{{Index: commit + 1, Term: term, Type: raft.LogCommand, Data: forged}},
			LeaderCommitIndex: commit + 1,
		}, &aeResp)
		refusedAtHandshake(t, m, "AppendEntries", err)
		var rvResp raft.RequestVoteResponse
		err = forger.RequestVote(raft.ServerID(m.NodeID), raft.ServerAddress(m.RaftAddr), &raft.RequestVoteRequest{
			RPCHeader: header, Term: term + 100, LastLogIndex: commit + 1000, LastLogTerm: term + 100,
		}, &rvResp)
		refusedAtHandshake(t, m, "RequestVote", err)
	}

	// A member's own certificate passes the handshake: a stale-term
	// AppendEntries is answered (and refused by raft, harmlessly).
	member := transport(t, sec.CertFile, sec.KeyFile, sec.CAFile)
	var resp raft.AppendEntriesResponse
	if err := member.AppendEntries(raft.ServerID(leader.NodeID), raft.ServerAddress(leader.RaftAddr),
		&raft.AppendEntriesRequest{RPCHeader: header, Term: 0}, &resp); err != nil {
		t.Fatalf("a member's certificate was refused: %v", err)
	}
	if resp.Success || resp.Term < term {
		t.Fatalf("stale AppendEntries answered %+v", resp)
	}

	// The cluster runs on, and nothing forged landed anywhere.
	launchtest.CreateTag(t, c, "after", 1)
	for _, m := range c.Stores {
		_, err := c.StoreClient(m).GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "forged", Local: true}))
		if connect.CodeOf(err) != connect.CodeNotFound {
			t.Errorf("%s: GetTag forged (local): %v, want not_found", m.Name, err)
		}
		st, err := c.Status(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if st.GetTerm() >= term+100 {
			t.Errorf("%s: term %d after a forged RequestVote of term %d", m.Name, st.GetTerm(), term+100)
		}
	}
	ids, err := c.AllocClient(c.Allocs[0]).NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "after", Count: 1}))
	if err != nil || len(ids.Msg.GetIds()) != 1 {
		t.Fatalf("the allocsvr (with its own client certificate) cannot serve: %v", err)
	}
}

// transport is a Raft NetworkTransport over TLS presenting the pair given
// and trusting caFile, as a member's would be built.
func transport(t *testing.T, certFile, keyFile, caFile string) *raftconf.Transport {
	t.Helper()
	keys, err := tlsconf.LoadKeyPair(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tlsconf.Mutual(keys, caFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := raftconf.NewTLSTransport("127.0.0.1:0", nil, cfg, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// refusedAtHandshake: err is the TLS alert a server sends when it refuses
// the client's certificate (under TLS 1.3 the client learns of it on its
// first read).
func refusedAtHandshake(t *testing.T, m *launch.Proc, rpc string, err error) {
	t.Helper()
	var alert tls.AlertError
	if err == nil {
		t.Errorf("%s: forged %s was answered", m.Name, rpc)
		return
	}
	if !errors.As(err, &alert) && !strings.Contains(err.Error(), "bad certificate") {
		t.Errorf("%s: forged %s failed, but not at the handshake: %v", m.Name, rpc, err)
	}
}
