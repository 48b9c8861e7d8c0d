package raftconf

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

func mutual(t *testing.T, ca *tlstest.CA, name string) *tls.Config {
	t.Helper()
	cert, key := ca.Issue(t, name, "127.0.0.1")
	keys, err := tlsconf.LoadKeyPair(cert, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tlsconf.Mutual(keys, ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestTLSTransport: an AppendEntries RPC crosses between two members'
// TLS transports; a member of another CA gets no answer.
func TestTLSTransport(t *testing.T) {
	ca := tlstest.NewCA(t)
	logger := hclog.NewNullLogger()
	adv := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)}
	newTrans := func(cfg *tls.Config) *raft.NetworkTransport {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		a := *adv
		a.Port = ln.Addr().(*net.TCPAddr).Port
		tr, err := NewTLSTransport(addr, &a, cfg, logger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	server := newTrans(mutual(t, ca, "s1"))
	go func() {
		for rpc := range server.Consumer() {
			rpc.Respond(&raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
		}
	}()
	client := newTrans(mutual(t, ca, "s2"))
	var resp raft.AppendEntriesResponse
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("s2"), Addr: []byte(client.LocalAddr())}, Term: 7}
	if err := client.AppendEntries("s1", server.LocalAddr(), req, &resp); err != nil {
		t.Fatal(err)
	}
	if !resp.Success || resp.Term != 7 {
		t.Fatalf("response %+v", resp)
	}
	stranger := newTrans(mutual(t, tlstest.NewCA(t), "x"))
	done := make(chan error, 1)
	go func() { done <- stranger.AppendEntries("s1", server.LocalAddr(), req, &raft.AppendEntriesResponse{}) }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a member of another CA was answered")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no refusal")
	}
}
