package storeclient

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

// tokenStore answers GetTag only to callers presenting want.
type tokenStore struct {
	seqsvrv1connect.UnimplementedStoreServiceHandler
	want string
}

func (s tokenStore) GetTag(_ context.Context, req *connect.Request[seqsvrv1.GetTagRequest]) (*connect.Response[seqsvrv1.Tag], error) {
	if req.Header().Get("Authorization") != "Bearer "+s.want {
		return nil, connect.NewError(connect.CodeUnauthenticated, nil)
	}
	return connect.NewResponse(&seqsvrv1.Tag{Tag: req.Msg.GetTag()}), nil
}

// TestTokenAndCA: an https:// store with a private CA is reached with
// Options.TLS trusting it, and every call carries Options.Token.
func TestTokenAndCA(t *testing.T) {
	ca := tlstest.NewCA(t)
	certFile, keyFile := ca.Issue(t, "store", "127.0.0.1")
	keys, err := tlsconf.LoadKeyPair(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	scfg, err := tlsconf.Server(keys, "")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle(seqsvrv1connect.NewStoreServiceHandler(tokenStore{want: "alloc-token-0123456789"}))
	// Not httptest's StartTLS: it puts its own certificate first.
	ln, err := tls.Listen("tcp", "127.0.0.1:0", scfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: mux}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	url := "https://" + ln.Addr().String()
	ccfg, err := tlsconf.Client(ca.CertFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c, err := New([]string{url}, Options{Token: "alloc-token-0123456789", TLS: ccfg, RetryBudget: 2e9})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetTag(ctx, "t"); err != nil {
		t.Fatalf("with token and CA: %v", err)
	}
	noTok, _ := New([]string{url}, Options{TLS: ccfg, RetryBudget: 2e9})
	if _, err := noTok.GetTag(ctx, "t"); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("without token: %v, want unauthenticated", err)
	}
	noCA, _ := New([]string{url}, Options{Token: "alloc-token-0123456789", RetryBudget: 2e9})
	cctx, cancel := context.WithTimeout(ctx, 2e9)
	defer cancel()
	if _, err := noCA.GetTag(cctx, "t"); err == nil {
		t.Fatal("a store with an unknown CA was trusted")
	}
}
