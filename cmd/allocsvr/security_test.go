package main

import (
	"context"
	"crypto/tls"
	"io"
	"log"
	"log/slog"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/serve"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

// tagStore answers GetTag; every other store RPC is unimplemented.
type tagStore struct {
	seqsvrv1connect.UnimplementedStoreServiceHandler
}

func (tagStore) GetTag(_ context.Context, r *connect.Request[seqsvrv1.GetTagRequest]) (*connect.Response[seqsvrv1.Tag], error) {
	return connect.NewResponse(&seqsvrv1.Tag{Tag: r.Msg.GetTag()}), nil
}

// TestStoreClientFollowsStoreCA: the allocsvr's store client trusts a
// rotated --store-ca without a restart. The store's certificate is of a
// CA not yet in the file: refused; once the CA is added to the file, new
// connections to the store are trusted.
func TestStoreClientFollowsStoreCA(t *testing.T) {
	oldCA, newCA := tlstest.NewCA(t), tlstest.NewCA(t)
	cert, key := newCA.Issue(t, "store", "127.0.0.1")
	keys, err := tlsconf.LoadKeyPair(cert, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	scfg, err := tlsconf.Server(keys, "")
	if err != nil {
		t.Fatal(err)
	}
	path, h := seqsvrv1connect.NewStoreServiceHandler(tagStore{})
	mux := http.NewServeMux()
	mux.Handle(path, h)
	// Not httptest's StartTLS: it adds a certificate of its own, which
	// wins over GetCertificate for a client that sends no SNI (an IP).
	ln, err := tls.Listen("tcp", "127.0.0.1:0", scfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ErrorLog: log.New(io.Discard, "", 0)} // quiet: the refused handshakes
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	storeURL := "https://" + ln.Addr().String()

	caFile := filepath.Join(t.TempDir(), "store-ca.pem")
	tlstest.WriteBundle(t, caFile, oldCA)
	cfg := &config{Stores: []string{storeURL}, StoreCA: caFile, StoreRequestTimeout: time.Second}
	peers, err := cfg.peerAccess(serve.Env{Logger: slog.Default()})
	if err != nil {
		t.Fatal(err)
	}
	store, err := cfg.storeClient(peers, slog.Default())
	if err != nil {
		t.Fatal(err)
	}
	get := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := store.GetTag(ctx, "t")
		return err
	}
	if err := get(); err == nil {
		t.Fatal("a store certificate of a CA not in --store-ca was trusted")
	}
	tlstest.WriteBundle(t, caFile, oldCA, newCA)
	poll.UntilOK(t, 10*time.Second, "the store trusted once its CA is added to --store-ca", get)
}
