package serve

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"

	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/h1"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/routes"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

// TestTLSWithTheFront runs a process with --tls-cert, --tls-client-ca,
// --auth-file and the front on, and calls it with real clients: the
// front answers an authorized HTTP/1.1 fast call (its counter moves), an
// unauthorized one is declined and refused by net/http, h2 and a gRPC
// stream (connect's gRPC protocol, via the reflection client) are served
// by net/http, and a client without a certificate is refused at the
// handshake.
func TestTLSWithTheFront(t *testing.T) {
	ca := tlstest.NewCA(t)
	cert, key := ca.Issue(t, "srv", "127.0.0.1")
	authPath := filepath.Join(t.TempDir(), "auth.json")
	const token = "Bearer c-token-0123456789abcdef"
	if err := os.WriteFile(authPath, []byte(`[{"name":"c","token":"c-token-0123456789abcdef","roles":["client"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	p := testProcess(true, func(_ context.Context, env Env) (*App, error) {
		addr <- env.Addr
		plain := protoEcho()
		plain["POST /api/fast"] = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "net/http") })
		return &App{
			Handler: Options{Routes: plain, Services: []routes.Service{{
				Name: seqsvrv1connect.AllocServiceName, Path: "/seqsvr.v1.AllocService/", Handler: http.NotFoundHandler(),
			}}},
			Fast: h1.HandlerFunc(func(req *h1.Request, resp *h1.Response) bool {
				if string(req.Path) != "/api/fast" {
					return false
				}
				resp.Body = append(resp.Buf[:0], "front"...)
				return true
			}),
		}, nil
	})
	p.Common.Security = Security{AuthFile: authPath, TLSCert: cert, TLSKey: key, TLSClientCA: ca.CertFile}
	p.Logger = slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	done := runBackground(ctx, p)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	base := "https://" + <-addr

	ccert, ckey := ca.Issue(t, "client")
	keys, err := tlsconf.LoadKeyPair(ccert, ckey, nil)
	if err != nil {
		t.Fatal(err)
	}
	withCert, err := tlsconf.Client(ca.CertFile, keys)
	if err != nil {
		t.Fatal(err)
	}
	client := func(cfg *tls.Config, h2 bool) *http.Client {
		var p http.Protocols
		p.SetHTTP1(!h2)
		p.SetHTTP2(h2)
		tr := &http.Transport{TLSClientConfig: cfg.Clone(), Protocols: &p, ForceAttemptHTTP2: h2}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	// hcm reads /metrics: a connection the front hands to net/http (as it
	// does at /metrics) stays net/http's, so the fast calls need their own.
	hc1, hc2, hcm := client(withCert, false), client(withCert, true), client(withCert, false)
	call := func(c *http.Client, method, path, auth string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader("x"))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Proto, string(b)
	}
	poll.Until(t, 10*time.Second, "serving", func() bool {
		code, _, _ := call(hcm, "GET", "/metrics", "")
		return code == http.StatusOK
	})
	served := func() int {
		t.Helper()
		_, _, body := call(hcm, "GET", "/metrics", "")
		sc := bufio.NewScanner(strings.NewReader(body))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "seqsvr_http_fast_requests_total "); ok {
				n, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatal(err)
				}
				return int(n)
			}
		}
		t.Fatal("no seqsvr_http_fast_requests_total: the front is off")
		return 0
	}

	before := served()
	for range 3 {
		if code, proto, body := call(hc1, "POST", "/api/fast", token); code != 200 || proto != "HTTP/1.1" || body != "front" {
			t.Fatalf("HTTP/1.1 with a token: %d %s %q", code, proto, body)
		}
	}
	if code, _, body := call(hc1, "POST", "/api/fast", ""); code != http.StatusUnauthorized {
		t.Fatalf("HTTP/1.1 without a token: %d %q", code, body)
	}
	if code, _, body := call(hc1, "POST", "/api/fast", "Bearer wrong-token-0123456789"); code != http.StatusUnauthorized {
		t.Fatalf("HTTP/1.1 with a wrong token: %d %q", code, body)
	}
	if n := served(); n != before+3 {
		t.Fatalf("front answered %d calls, want 3 (the authorized ones)", n-before)
	}

	before = served()
	if code, proto, body := call(hc2, "POST", "/api/fast", token); code != 200 || proto != "HTTP/2.0" || body != "net/http" {
		t.Fatalf("h2 with a token: %d %s %q", code, proto, body)
	}
	if code, _, body := call(hc2, "GET", "/proto", token); code != 200 || body != "HTTP/2.0" {
		t.Fatalf("h2 /proto: %d %q", code, body)
	}
	stream := grpcreflect.NewClient(hc2, base, connect.WithGRPC()).NewStream(context.Background(),
		grpcreflect.WithRequestHeaders(http.Header{"Authorization": {token}}))
	names, err := stream.ListServices()
	stream.Close()
	if err != nil {
		t.Fatalf("gRPC reflection over TLS: %v", err)
	}
	if len(names) == 0 {
		t.Fatal("gRPC reflection listed no services")
	}
	if n := served(); n != before {
		t.Fatalf("front answered %d h2 calls", n-before)
	}

	noCert, err := tlsconf.Client(ca.CertFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h2 := range []bool{false, true} {
		res, err := client(noCert, h2).Get(base + "/healthz")
		if err == nil {
			res.Body.Close()
			t.Fatalf("h2=%v: a client without a certificate got %d", h2, res.StatusCode)
		}
	}
}
