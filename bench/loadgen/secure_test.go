package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// alloc-raw over TLS with a token: every request carries the bearer
// token, the connection is kept alive across calls (one handshake), and
// HTTP/1.1 is what ALPN settles on even though the server offers h2.
func TestRawTLSWithToken(t *testing.T) {
	oneID, _ := proto.Marshal(&seqsvrv1.NextIDsResponse{Ids: []int64{7}})
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer secret-token-0123456789" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		if r.ProtoMajor != 1 {
			http.Error(w, "want HTTP/1.1", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/proto")
		_, _ = w.Write(oneID)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())

	mk, err := newDoer("alloc-raw", srv.URL, "", "bench", 1, 1, 0, rawSecurity{token: "secret-token-0123456789", tls: &tls.Config{RootCAs: pool}})
	if err != nil {
		t.Fatal(err)
	}
	do, err := mk()
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if n, err := do(context.Background()); err != nil || n != 1 {
			t.Fatalf("alloc-raw over TLS: %d %v", n, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for 5 calls, want 1 kept alive", n)
	}

	mk, _ = newDoer("alloc-raw", srv.URL, "", "bench", 1, 1, 0, rawSecurity{tls: &tls.Config{RootCAs: pool}})
	do, _ = mk()
	if _, err := do(context.Background()); err == nil {
		t.Error("a call without the token counted")
	}
	mk, _ = newDoer("alloc-raw", srv.URL, "", "bench", 1, 1, 0, rawSecurity{tls: &tls.Config{}})
	do, _ = mk()
	if _, err := do(context.Background()); err == nil {
		t.Error("a server certificate of an untrusted CA was accepted")
	}
}

// TLS options must match the URL's scheme, and apply to raw targets only.
func TestRawSecurityChecks(t *testing.T) {
	if _, err := newRawClient("https://127.0.0.1:1", "GET", "/", nil, nil, nil); err == nil {
		t.Error("https URL without a TLS configuration accepted")
	}
	if _, err := newRawClient("http://127.0.0.1:1", "GET", "/", nil, &tls.Config{}, nil); err == nil {
		t.Error("TLS configuration for an http URL accepted")
	}
	if _, err := newDoer("alloc-connect", "http://127.0.0.1:1", "", "bench", 1, 1, 0, rawSecurity{token: "x"}); err == nil {
		t.Error("-token accepted for a Go-client target")
	}
	if _, err := securityFlags("", "ca.pem", true); err == nil {
		t.Error("-tls-ca with -insecure accepted")
	}
}
