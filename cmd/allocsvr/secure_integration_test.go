package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

const (
	secClientTok = "client-token-aaaaaaaaaaaaaaaa"
	secAllocTok  = "alloc-token-bbbbbbbbbbbbbbbbb"
	secAdminTok  = "admin-token-ccccccccccccccccc"
	secNewTok    = "client-token-after-the-reload"
)

func authFile(entries ...string) string {
	return "[" + strings.Join(entries, ",") + "]"
}

func entry(name, token, role string) string {
	return fmt.Sprintf(`{"name": %q, "token": %q, "roles": [%q]}`, name, token, role)
}

func writeTestFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// secureCluster is 3 storesvrs and 1 allocsvr with the secure mode on:
// tokens everywhere, HTTPS on every API, client certificates required by
// the stores (the allocsvr and the members present theirs), Raft between
// members over mutual TLS.
type secureCluster struct {
	c                 *launch.Cluster
	alloc             *launch.Proc
	allocAuth         string
	ca                string
	caObj             *tlstest.CA // issues the certificates; its file is every CA flag
	raftCert, raftKey string
	storeURLs         []string
	allocURL          string
	allocURLs         []string
	withCert, noCert  *http.Client // both trust the CA; one presents a client certificate
}

// startSecure starts the secure cluster with allocs allocsvrs; with
// joiner a fourth storesvr joins the three through s1 with
// --join-token-file.
func startSecure(t *testing.T, allocs int, joiner ...bool) *secureCluster {
	t.Helper()
	launchtest.SkipShort(t)
	dir := t.TempDir()
	ca := tlstest.NewCA(t)
	cert, key := ca.Issue(t, "node", "127.0.0.1", "localhost")
	raftCert, raftKey := ca.Issue(t, "raft", "127.0.0.1")
	storeAuth, allocAuth := filepath.Join(dir, "store-auth.json"), filepath.Join(dir, "alloc-auth.json")
	all := authFile(entry("app", secClientTok, "client"), entry("allocsvr", secAllocTok, "alloc"), entry("ops", secAdminTok, "admin"))
	writeTestFile(t, storeAuth, all)
	writeTestFile(t, allocAuth, all)
	tokFile := filepath.Join(dir, "alloc.token")
	adminFile := filepath.Join(dir, "admin.token")
	writeTestFile(t, adminFile, secAdminTok+"\n")
	writeTestFile(t, tokFile, secAllocTok+"\n")

	stores := 3
	if len(joiner) > 0 && joiner[0] {
		stores = 4
	}
	c, err := launch.New(launch.Options{
		BinDir: launchtest.BinDir(t), Dir: dir, Stores: stores, Allocs: allocs,
		StoreArgs: []string{"--auth-file", storeAuth, "--join-token-file", adminFile, "--tls-cert", cert, "--tls-key", key, "--tls-client-ca", ca.CertFile,
			"--raft-tls-cert", raftCert, "--raft-tls-key", raftKey, "--raft-tls-ca", ca.CertFile},
		AllocArgs: []string{"--auth-file", allocAuth, "--tls-cert", cert, "--tls-key", key,
			"--store-token-file", tokFile, "--store-ca", ca.CertFile},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if stores == 4 {
		peers := launch.PeersFlag(c.Stores[:3])
		for _, p := range c.Stores[:3] {
			p.Peers = peers
		}
		s4 := c.Stores[3]
		s4.Peers, s4.Join = "", c.Stores[0].HTTPAddr
	}
	s := &secureCluster{c: c, allocAuth: allocAuth, ca: ca.CertFile, caObj: ca, raftCert: raftCert, raftKey: raftKey}
	for _, p := range c.Stores {
		s.storeURLs = append(s.storeURLs, "https://"+p.HTTPAddr)
	}
	for _, a := range c.Allocs {
		a.Stores = s.storeURLs
		a.ExtraArgs = append(a.ExtraArgs, "--advertise-url", "https://"+a.HTTPAddr)
		s.allocURLs = append(s.allocURLs, "https://"+a.HTTPAddr)
	}
	if allocs > 0 {
		s.alloc, s.allocURL = c.Allocs[0], s.allocURLs[0]
	}

	keys, err := tlsconf.LoadKeyPair(cert, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.withCert = tlsClient(t, ca.CertFile, keys)
	s.noCert = tlsClient(t, ca.CertFile, nil)

	ctx := launchtest.Context(t, 60*time.Second)
	for _, p := range c.All() {
		if err := p.Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, u := range append(append([]string{}, s.storeURLs...), s.allocURLs...) {
		waitReady(ctx, t, s.withCert, u)
	}
	return s
}

func tlsClient(t *testing.T, ca string, keys *tlsconf.KeyPair) *http.Client {
	t.Helper()
	cfg, err := tlsconf.Client(ca, keys)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig, tr.ForceAttemptHTTP2 = cfg, true
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// waitReady polls /readyz, which needs no token.
func waitReady(ctx context.Context, t *testing.T, hc *http.Client, base string) {
	t.Helper()
	poll.UntilCtx(ctx, t, base+" ready", func() bool {
		resp, err := hc.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
}

func withToken[T any](msg *T, token string) *connect.Request[T] {
	r := connect.NewRequest(msg)
	if token != "" {
		r.Header().Set("Authorization", "Bearer "+token)
	}
	return r
}

func wantCode(t *testing.T, what string, err error, want connect.Code) {
	t.Helper()
	if got := connect.CodeOf(err); err == nil && want != 0 || err != nil && got != want {
		t.Errorf("%s: err %v, want code %v", what, err, want)
	}
}

// leafGet is GET base+path with the token, answering status and body.
func leafGet(t *testing.T, hc *http.Client, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// secMetric reads one series (name with its labels, as printed) from
// base's /metrics through hc.
func secMetric(t *testing.T, hc *http.Client, base, name string) float64 {
	t.Helper()
	code, body := leafGet(t, hc, base+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("%s/metrics: %d", base, code)
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err != nil {
				t.Fatalf("%s: %q", name, sc.Text())
			}
			return f
		}
	}
	t.Fatalf("%s/metrics has no %s", base, name)
	return 0
}

func TestSecureCluster(t *testing.T) {
	s := startSecure(t, 1)
	ctx := launchtest.Context(t, 90*time.Second)

	// Store: roles. Each member gets a write: followers forward it with
	// the caller's token, so the leader's check passes for admin only.
	for i, u := range s.storeURLs {
		st := seqsvrv1connect.NewStoreServiceClient(s.withCert, u)
		tag := fmt.Sprintf("sec%d", i)
		_, err := st.CreateTag(ctx, withToken(&seqsvrv1.CreateTagRequest{Tag: tag}, ""))
		wantCode(t, "CreateTag without a token", err, connect.CodeUnauthenticated)
		_, err = st.CreateTag(ctx, withToken(&seqsvrv1.CreateTagRequest{Tag: tag}, "not-a-known-token-at-all"))
		wantCode(t, "CreateTag with an unknown token", err, connect.CodeUnauthenticated)
		_, err = st.CreateTag(ctx, withToken(&seqsvrv1.CreateTagRequest{Tag: tag}, secClientTok))
		wantCode(t, "CreateTag as client", err, connect.CodePermissionDenied)
		_, err = st.CreateTag(ctx, withToken(&seqsvrv1.CreateTagRequest{Tag: tag}, secAllocTok))
		wantCode(t, "CreateTag as alloc", err, connect.CodePermissionDenied)
		_, err = st.CreateTag(ctx, withToken(&seqsvrv1.CreateTagRequest{Tag: tag, Step: 10}, secAdminTok))
		wantCode(t, "CreateTag as admin via "+u, err, 0)
		_, err = st.GetTag(ctx, withToken(&seqsvrv1.GetTagRequest{Tag: tag}, secClientTok))
		wantCode(t, "GetTag as client", err, 0)
		_, err = st.ReserveSegment(ctx, withToken(&seqsvrv1.ReserveSegmentRequest{Tag: tag}, secClientTok))
		wantCode(t, "ReserveSegment as client", err, connect.CodePermissionDenied)
		_, err = st.ReserveSegment(ctx, withToken(&seqsvrv1.ReserveSegmentRequest{Tag: tag}, secAllocTok))
		wantCode(t, "ReserveSegment as alloc via "+u, err, 0)
		// gRPC over h2 (ALPN) is checked the same way.
		g := seqsvrv1connect.NewStoreServiceClient(s.withCert, u, connect.WithGRPC())
		_, err = g.DeleteTag(ctx, withToken(&seqsvrv1.DeleteTagRequest{Tag: tag}, secClientTok))
		wantCode(t, "gRPC DeleteTag as client", err, connect.CodePermissionDenied)
		_, err = g.ClusterStatus(ctx, withToken(&seqsvrv1.ClusterStatusRequest{}, secClientTok))
		wantCode(t, "gRPC ClusterStatus as client", err, 0)
	}

	// Store: mutual TLS. A client without a certificate gets no answer.
	noCert := seqsvrv1connect.NewStoreServiceClient(s.noCert, s.storeURLs[0])
	if _, err := noCert.GetTag(ctx, withToken(&seqsvrv1.GetTagRequest{Tag: "sec0"}, secClientTok)); err == nil {
		t.Error("store answered a client without a certificate")
	}

	// Raft listens for mutual TLS only: a member's certificate completes
	// the handshake, a client without one is cut off.
	raftAddr := s.c.Stores[0].RaftAddr
	keys, err := tlsconf.LoadKeyPair(s.raftCert, s.raftKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []*tlsconf.KeyPair{keys, nil} {
		cfg, err := tlsconf.Client(s.ca, k)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", raftAddr, cfg)
		if err == nil {
			_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
			// TLS 1.3 reports a refused client certificate on the first read.
			_, err = conn.Read(make([]byte, 1))
			conn.Close()
		}
		refused := err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
		if refused != (k == nil) {
			t.Errorf("Raft TLS with client certificate %v: %v", k != nil, err)
		}
	}

	// Allocsvr: it reaches the store with its alloc token over HTTPS.
	al := seqsvrv1connect.NewAllocServiceClient(s.noCert, s.allocURL)
	var res *connect.Response[seqsvrv1.NextIDsResponse]
	err = errs.Retry(ctx, launchtest.Retry(errs.AllocCall), func(context.Context, int) (err error) {
		res, err = al.NextIDs(ctx, withToken(&seqsvrv1.NextIDsRequest{Tag: "sec0", Count: 3}, secClientTok))
		return err
	})
	if err != nil {
		t.Fatalf("NextIDs as client: %v", err)
	}
	if len(res.Msg.GetIds()) != 3 {
		t.Fatalf("NextIDs: %v", res.Msg.GetIds())
	}
	_, err = al.NextIDs(ctx, withToken(&seqsvrv1.NextIDsRequest{Tag: "sec0"}, ""))
	wantCode(t, "NextIDs without a token", err, connect.CodeUnauthenticated)
	_, err = al.NextIDs(ctx, withToken(&seqsvrv1.NextIDsRequest{Tag: "sec0"}, "not-a-known-token-at-all"))
	wantCode(t, "NextIDs with an unknown token", err, connect.CodeUnauthenticated)
	// The binary Connect call the front serves on plain HTTP.
	bin := seqsvrv1connect.NewAllocServiceClient(s.noCert, s.allocURL, connect.WithProtoJSON())
	_, err = bin.Status(ctx, withToken(&seqsvrv1.StatusRequest{}, ""))
	wantCode(t, "Status without a token", err, connect.CodeUnauthenticated)

	// Leaf API: 401 one line without a known token, the ID with one.
	leaf := s.allocURL + "/api/segment/get/sec0"
	if code, body := leafGet(t, s.noCert, leaf, ""); code != http.StatusUnauthorized || strings.Count(body, "\n") != 1 {
		t.Errorf("Leaf without a token: %d %q", code, body)
	}
	if code, body := leafGet(t, s.noCert, leaf, "not-a-known-token-at-all"); code != http.StatusUnauthorized {
		t.Errorf("Leaf with an unknown token: %d %q", code, body)
	}
	if code, body := leafGet(t, s.noCert, leaf, secClientTok); code != http.StatusOK {
		t.Errorf("Leaf as client: %d %q", code, body)
	}

	// The HTTP/1.1 front serves over TLS too: binary NextIDs from an
	// HTTP/1.1 client (ALPN http/1.1) are answered by it, its counter
	// moves; the h2 clients above were handed to net/http.
	fastBefore := secMetric(t, s.withCert, s.allocURL, "seqsvr_http_fast_requests_total")
	h1cfg, err := tlsconf.Client(s.ca, nil)
	if err != nil {
		t.Fatal(err)
	}
	h1cfg.NextProtos = []string{"http/1.1"}
	h1tr := &http.Transport{TLSClientConfig: h1cfg}
	defer h1tr.CloseIdleConnections()
	h1al := seqsvrv1connect.NewAllocServiceClient(&http.Client{Transport: h1tr, Timeout: 10 * time.Second}, s.allocURL)
	for range 5 {
		r, err := h1al.NextIDs(ctx, withToken(&seqsvrv1.NextIDsRequest{Tag: "sec0", Count: 2}, secClientTok))
		if err != nil || len(r.Msg.GetIds()) != 2 {
			t.Fatalf("NextIDs over HTTPS/1.1: %v %v", r, err)
		}
	}
	if n := secMetric(t, s.withCert, s.allocURL, "seqsvr_http_fast_requests_total") - fastBefore; n < 5 {
		t.Errorf("the front answered %v of 5 NextIDs over HTTPS/1.1", n)
	}
	if n := secMetric(t, s.withCert, s.allocURL, `seqsvr_http_handoffs_total{reason="h2"}`); n < 1 {
		t.Errorf("no h2 connection handed to net/http (%v)", n)
	}

	// Health and metrics stay open.
	for _, u := range []string{s.allocURL, s.storeURLs[1]} {
		for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
			if code, body := leafGet(t, s.withCert, u+p, ""); code != http.StatusOK {
				t.Errorf("%s%s without a token: %d %.80q", u, p, code, body)
			}
		}
	}

	// Plain HTTP to the HTTPS port is refused: no ID handed out.
	plain := &http.Client{Timeout: 5 * time.Second}
	if resp, err := plain.Get("http://" + s.alloc.HTTPAddr + "/api/segment/get/sec0"); err == nil {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP answered 200 %q", b)
		}
	}

	// HTTP/1.1 over TLS (ALPN chose http/1.1) is served by net/http.
	cfg, err := tlsconf.Client(s.ca, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg.NextProtos = []string{"http/1.1"}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", s.alloc.HTTPAddr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("ALPN chose %q", p)
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	for _, tok := range []string{secClientTok, ""} {
		fmt.Fprintf(conn, "GET /api/segment/get/sec0 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", tok)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		want := http.StatusOK
		if tok == "" {
			want = http.StatusUnauthorized
		}
		if resp.StatusCode != want {
			t.Errorf("HTTP/1.1 over TLS with token %q: %d, want %d", tok, resp.StatusCode, want)
		}
	}
}

// TestSecureReload: SIGHUP re-reads the auth file; a file that does not
// load keeps the tokens in force.
func TestSecureReload(t *testing.T) {
	s := startSecure(t, 1)
	ctx := launchtest.Context(t, 60*time.Second)
	al := seqsvrv1connect.NewAllocServiceClient(s.noCert, s.allocURL)
	call := func(tok string) error {
		_, err := al.Status(ctx, withToken(&seqsvrv1.StatusRequest{}, tok))
		return err
	}
	if err := call(secClientTok); err != nil {
		t.Fatal(err)
	}
	wantCode(t, "new token before the reload", call(secNewTok), connect.CodeUnauthenticated)

	// One kept-alive HTTPS/1.1 connection, served by the front, which
	// remembers the token the connection presented: after the reload the
	// same connection must be refused with the removed token too.
	st := seqsvrv1connect.NewStoreServiceClient(s.withCert, s.storeURLs[0])
	if _, err := st.CreateTag(ctx, withToken(&seqsvrv1.CreateTagRequest{Tag: "reload", Step: 10}, secAdminTok)); err != nil {
		t.Fatal(err)
	}
	h1cfg, err := tlsconf.Client(s.ca, nil)
	if err != nil {
		t.Fatal(err)
	}
	h1cfg.NextProtos = []string{"http/1.1"}
	var conns atomic.Int32
	h1tr := &http.Transport{TLSClientConfig: h1cfg, MaxConnsPerHost: 1}
	h1tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conns.Add(1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	defer h1tr.CloseIdleConnections()
	h1al := seqsvrv1connect.NewAllocServiceClient(&http.Client{Transport: h1tr, Timeout: 10 * time.Second}, s.allocURL)
	nextIDs := func(tok string) error {
		_, err := h1al.NextIDs(ctx, withToken(&seqsvrv1.NextIDsRequest{Tag: "reload", Count: 1}, tok))
		return err
	}
	poll.UntilCtx(ctx, t, "NextIDs on the new tag", func() bool { return nextIDs(secClientTok) == nil })
	fastBefore := secMetric(t, s.withCert, s.allocURL, "seqsvr_http_fast_requests_total")
	for range 3 {
		if err := nextIDs(secClientTok); err != nil {
			t.Fatal(err)
		}
	}
	if n := secMetric(t, s.withCert, s.allocURL, "seqsvr_http_fast_requests_total") - fastBefore; n < 3 {
		t.Fatalf("the front answered %v of 3 NextIDs over HTTPS/1.1", n)
	}
	dialed := conns.Load()

	writeTestFile(t, s.allocAuth, "[{ broken")
	if err := s.alloc.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := call(secClientTok); err != nil {
		t.Fatalf("a broken file replaced the tokens: %v", err)
	}

	writeTestFile(t, s.allocAuth, authFile(entry("app2", secNewTok, "client"), entry("allocsvr", secAllocTok, "alloc")))
	if err := s.alloc.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.UntilCtx(ctx, t, "the new token accepted", func() bool { return call(secNewTok) == nil })
	wantCode(t, "removed token after the reload", call(secClientTok), connect.CodeUnauthenticated)
	wantCode(t, "removed token after the reload, on the front's kept-alive connection", nextIDs(secClientTok), connect.CodeUnauthenticated)
	if n := conns.Load(); n != dialed {
		t.Errorf("the HTTPS/1.1 client dialed %d connections, want the one kept alive", n)
	}
	if !s.alloc.Running() {
		t.Fatal("allocsvr died on SIGHUP")
	}
}

// TestSecureSeqForwarding: per-key calls forwarded between allocsvrs go
// over HTTPS with the forwarding allocsvr's store token (role alloc),
// which the other allocsvr's auth file lists.
func TestSecureSeqForwarding(t *testing.T) {
	s := startSecure(t, 2)
	ctx := launchtest.Context(t, 60*time.Second)
	st := seqsvrv1connect.NewStoreServiceClient(s.withCert, s.storeURLs[0])
	_, err := st.CreateSpace(ctx, withToken(&seqsvrv1.CreateSpaceRequest{Space: "sp", KeyCount: 40, SectionSize: 10, Step: 100}, secAdminTok))
	if err != nil {
		t.Fatal(err)
	}
	keys := make([]uint64, 40)
	for i := range keys {
		keys[i] = uint64(i)
	}
	last := ""
	poll.UntilCtx(ctx, t, "both allocsvrs forwarding", func() bool {
		for _, u := range s.allocURLs {
			sq := seqsvrv1connect.NewSeqServiceClient(s.noCert, u)
			if _, err := sq.NextSeqs(ctx, withToken(&seqsvrv1.NextSeqsRequest{Space: "sp", Keys: keys}, secClientTok)); err != nil {
				if msg := err.Error(); msg != last {
					t.Logf("NextSeqs via %s: %v", u, err)
					last = msg
				}
				return false
			}
		}
		for _, u := range s.allocURLs {
			if f := httpsMetric(t, s.noCert, u, "seqsvr_seq_forwards_total"); f == 0 {
				return false
			}
		}
		return true
	})
	sq := seqsvrv1connect.NewSeqServiceClient(s.noCert, s.allocURLs[1])
	_, err = sq.NextSeq(ctx, withToken(&seqsvrv1.NextSeqRequest{Space: "sp", Key: 1}, ""))
	wantCode(t, "NextSeq without a token", err, connect.CodeUnauthenticated)
}

// httpsMetric reads one unlabelled metric from base's /metrics (open).
func httpsMetric(t *testing.T, hc *http.Client, base, name string) float64 {
	t.Helper()
	code, body := leafGet(t, hc, base+"/metrics", "")
	if code != http.StatusOK {
		t.Fatalf("%s/metrics: %d", base, code)
	}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err != nil {
				t.Fatalf("%s: %q", name, line)
			}
			return f
		}
	}
	return 0
}

// TestSecureJoin: a storesvr joins a secure cluster: its AddMember goes
// over HTTPS with its certificate and its join token (forwarded to the
// leader with that token), and Raft to it runs over mutual TLS.
func TestSecureJoin(t *testing.T) {
	s := startSecure(t, 0, true)
	ctx := launchtest.Context(t, 60*time.Second)
	st := seqsvrv1connect.NewStoreServiceClient(s.withCert, s.storeURLs[3])
	poll.UntilCtx(ctx, t, "s4 a voting member", func() bool {
		res, err := st.ClusterStatus(ctx, withToken(&seqsvrv1.ClusterStatusRequest{}, secClientTok))
		if err != nil || len(res.Msg.GetMembers()) != 4 {
			return false
		}
		for _, m := range res.Msg.GetMembers() {
			if m.GetId() == "s4" {
				return m.GetHttpAddr() == s.c.Stores[3].HTTPAddr
			}
		}
		return false
	})
	// Writes through the new member reach the leader.
	_, err := st.CreateTag(ctx, withToken(&seqsvrv1.CreateTagRequest{Tag: "joined"}, secAdminTok))
	wantCode(t, "CreateTag through s4", err, 0)
}

// TestSecureCARotation: the CA files are re-read while the members run.
// A client certificate of a new CA is refused until the new CA is added
// to the file every member's --tls-client-ca and --raft-tls-ca name; then
// it is let in by every member, with no restart, and Raft (whose certificates
// are of the old CA, still in the file) keeps committing.
func TestSecureCARotation(t *testing.T) {
	s := startSecure(t, 0)
	ctx := launchtest.Context(t, 60*time.Second)
	newCA := tlstest.NewCA(t)
	cert, key := newCA.Issue(t, "client-of-new-ca", "127.0.0.1")
	keys, err := tlsconf.LoadKeyPair(cert, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	status := func(hc *http.Client, base string) error {
		_, err := seqsvrv1connect.NewStoreServiceClient(hc, base).ClusterStatus(ctx, withToken(&seqsvrv1.ClusterStatusRequest{}, secClientTok))
		return err
	}
	// A fresh transport per call: the point is the handshake.
	newClient := func() *http.Client { return tlsClient(t, s.ca, keys) }
	for _, u := range s.storeURLs {
		if err := status(newClient(), u); err == nil {
			t.Fatalf("%s let in a client certificate of a CA not in its --tls-client-ca", u)
		}
	}
	tlstest.WriteBundle(t, s.ca, s.caObj, newCA)
	for _, u := range s.storeURLs {
		poll.UntilCtx(ctx, t, u+" trusting the new CA", func() bool { return status(newClient(), u) == nil })
	}
	// Raft (certificates of the old CA, still in the file) keeps working:
	// a write commits (retried while an election, if any, runs).
	st := seqsvrv1connect.NewStoreServiceClient(s.withCert, s.storeURLs[0])
	poll.UntilCtx(ctx, t, "a write after the CA file changed", func() bool {
		_, err := st.CreateTag(ctx, withToken(&seqsvrv1.CreateTagRequest{Tag: "after-rotation"}, secAdminTok))
		return err == nil || connect.CodeOf(err) == connect.CodeAlreadyExists
	})
}
