package raftconf

import (
	"crypto/tls"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/seqsvr/seqsvr/internal/poll"
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
	cfg, err := tlsconf.Mutual(keys, ca.CertFile, nil)
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
	newTrans := func(cfg *tls.Config) *Transport {
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
	// Like the TCP transport, it does not pipeline (transportConfig).
	if _, err := client.AppendEntriesPipeline("s1", server.LocalAddr()); !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("TLS transport pipelines: %v", err)
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

// TestTLSTransportFollowsCAFile: --raft-tls-ca is read again while the
// transports run: the dialing side trusts a new CA added to its file, and
// the listening side lets in a member of a CA added to its file, with
// real TLS transports and no restart.
func TestTLSTransportFollowsCAFile(t *testing.T) {
	caA, caB, caC := tlstest.NewCA(t), tlstest.NewCA(t), tlstest.NewCA(t)
	dir := t.TempDir()
	member := func(name string, ca *tlstest.CA, trust ...*tlstest.CA) (*tls.Config, string) {
		caFile := filepath.Join(dir, name+"-ca.pem")
		tlstest.WriteBundle(t, caFile, trust...)
		cert, key := ca.Issue(t, name, "127.0.0.1")
		keys, err := tlsconf.LoadKeyPair(cert, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := tlsconf.Mutual(keys, caFile, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cfg, caFile
	}
	logger := hclog.NewNullLogger()
	newTrans := func(cfg *tls.Config) *Transport {
		tr, err := NewTLSTransport("127.0.0.1:0", nil, cfg, logger)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		return tr
	}
	s1cfg, s1ca := member("s1", caB, caA, caB)
	server := newTrans(s1cfg)
	go func() {
		for rpc := range server.Consumer() {
			rpc.Respond(&raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
		}
	}()
	call := func(tr *Transport) error {
		done := make(chan error, 1)
		go func() {
			req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("x"), Addr: []byte(tr.LocalAddr())}, Term: 7}
			done <- tr.AppendEntries("s1", server.LocalAddr(), req, &raft.AppendEntriesResponse{})
		}()
		select {
		case err := <-done:
			return err
		case <-time.After(15 * time.Second):
			return errors.New("no answer and no refusal in 15 s")
		}
	}

	// The dialing side: s2 (CA A) does not trust s1's CA B until its file says so.
	s2cfg, s2ca := member("s2", caA, caA)
	s2 := newTrans(s2cfg)
	if err := call(s2); err == nil {
		t.Fatal("s2 trusted a server of a CA not in its file")
	}
	tlstest.WriteBundle(t, s2ca, caA, caB)
	poll.UntilOK(t, 20*time.Second, "s2 after its CA file gained CA B", func() error { return call(s2) })

	// The listening side: s1 refuses s3 (CA C) until its file holds C.
	s3cfg, _ := member("s3", caC, caA, caB, caC)
	s3 := newTrans(s3cfg)
	if err := call(s3); err == nil {
		t.Fatal("s1 let in a member of a CA not in its file")
	}
	tlstest.WriteBundle(t, s1ca, caA, caB, caC)
	poll.UntilOK(t, 20*time.Second, "s3 after s1's CA file gained CA C", func() error { return call(s3) })
}
