package h1

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

// tlsServer is the front serving HTTPS as internal/serve sets it up
// (tlsconf.Server: h2 and http/1.1 by ALPN, client certificates with a
// client CA), its /fast route answered by the front and everything else
// by net/http, which reports the protocol and what it saw of TLS.
type tlsServer struct {
	*Server
	addr     string
	ca       *tlstest.CA
	clientCA string // the CA file client certificates are checked against; "" without mTLS
	keys     *tlsconf.KeyPair
}

func startTLS(t testing.TB, mutual bool, readHeader time.Duration) *tlsServer {
	t.Helper()
	ca := tlstest.NewCA(t)
	certFile, keyFile := ca.Issue(t, "srv", "127.0.0.1")
	keys, err := tlsconf.LoadKeyPair(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	ts := &tlsServer{ca: ca, keys: keys}
	if mutual {
		ts.clientCA = ca.CertFile
	}
	cfg, err := tlsconf.Server(keys, ts.clientCA)
	if err != nil {
		t.Fatal(err)
	}
	var m Mux
	m.Handle("/fast", HandlerFunc(func(req *Request, resp *Response) bool {
		resp.Body = append(append(resp.Buf[:0], "fast:"...), req.Body...)
		return true
	}))
	slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		peers := -1
		if r.TLS != nil {
			peers = len(r.TLS.PeerCertificates)
		}
		fmt.Fprintf(w, "slow:%s %s %s tls=%v peers=%d", r.URL.Path, body, r.Proto, r.TLS != nil, peers)
	})
	var p http.Protocols
	p.SetHTTP1(true)
	p.SetHTTP2(true)
	ts.Server = &Server{
		HTTP: &http.Server{Handler: slow, Protocols: &p, ReadHeaderTimeout: readHeader, TLSConfig: cfg},
		Fast: &m,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts.addr = ln.Addr().String()
	done := make(chan error, 1)
	go func() { done <- ts.ServeTLS(ln) }()
	t.Cleanup(func() {
		_ = ts.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("ServeTLS returned %v, want http.ErrServerClosed", err)
		}
	})
	return ts
}

// clientConfig trusts ts's CA, asks for protos by ALPN and, with cert,
// presents a certificate from that CA.
func (ts *tlsServer) clientConfig(t testing.TB, cert bool, protos ...string) *tls.Config {
	t.Helper()
	var keys *tlsconf.KeyPair
	if cert {
		c, k := ts.ca.Issue(t, "client")
		var err error
		if keys, err = tlsconf.LoadKeyPair(c, k, nil); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := tlsconf.Client(ts.ca.CertFile, keys)
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.Clone()
	cfg.NextProtos = protos
	return cfg
}

// dialTLS is a raw client on one TLS connection.
func (ts *tlsServer) dialTLS(t *testing.T, cfg *tls.Config) *client {
	t.Helper()
	c, err := tls.Dial("tcp", ts.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	return &client{t: t, c: c, br: bufio.NewReader(c)}
}

// TestTLSFrontThenHandOffOnOneConnection: over one kept-alive TLS
// connection (ALPN http/1.1) the front answers /fast, then hands the
// connection to net/http for a route it does not take, which sees the
// request as HTTPS (Request.TLS, the client's certificate), and the front
// never answers on it again.
func TestTLSFrontThenHandOffOnOneConnection(t *testing.T) {
	ts := startTLS(t, true, 0)
	c := ts.dialTLS(t, ts.clientConfig(t, true, "http/1.1"))
	if p := c.c.(*tls.Conn).ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Fatalf("negotiated %q", p)
	}
	c.send(post("/fast", "a"))
	c.wantBody("fast:a")
	if st := ts.Stats(); st.Served != 1 {
		t.Fatalf("front served %d, want 1", st.Served)
	}
	c.send(post("/other", "b") + post("/fast", "c"))
	c.wantBody("slow:/other b HTTP/1.1 tls=true peers=1")
	c.wantBody("slow:/fast c HTTP/1.1 tls=true peers=1")
	st := ts.Stats()
	if st.Served != 1 || st.HandOffs["declined"] != 1 {
		t.Fatalf("stats %+v, want 1 served and 1 declined hand-off", st)
	}
}

// TestTLSFirstRequestHandOffKeepsTLS: a connection handed off at its first
// request is HTTPS to net/http too.
func TestTLSFirstRequestHandOffKeepsTLS(t *testing.T) {
	ts := startTLS(t, false, 0)
	c := ts.dialTLS(t, ts.clientConfig(t, false)) // no ALPN: HTTP/1.1
	c.send("GET /x?q=1 HTTP/1.1\r\nHost: t\r\n\r\n")
	c.wantBody("slow:/x  HTTP/1.1 tls=true peers=0")
	if st := ts.Stats(); st.Served != 0 || st.HandOffs["unsupported"] != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestTLSGoClients: Go's http.Client over HTTP/1.1 is answered by the
// front; over h2 by net/http, which gets the *tls.Conn as it is.
func TestTLSGoClients(t *testing.T) {
	ts := startTLS(t, false, 0)
	do := func(c *http.Client, path string) (string, string) {
		t.Helper()
		res, err := c.Post("https://"+ts.addr+path, "text/plain", strings.NewReader("x"))
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.Proto, string(b)
	}
	var p1 http.Protocols
	p1.SetHTTP1(true)
	h1c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Protocols: &p1, TLSClientConfig: ts.clientConfig(t, false)}}
	defer h1c.CloseIdleConnections()
	for range 3 {
		if proto, body := do(h1c, "/fast"); proto != "HTTP/1.1" || body != "fast:x" {
			t.Fatalf("HTTP/1.1 /fast: %s %q", proto, body)
		}
	}
	if st := ts.Stats(); st.Served != 3 {
		t.Fatalf("front served %d of 3 HTTP/1.1 calls", st.Served)
	}
	var p2 http.Protocols
	p2.SetHTTP2(true)
	h2c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Protocols: &p2, ForceAttemptHTTP2: true, TLSClientConfig: ts.clientConfig(t, false)}}
	defer h2c.CloseIdleConnections()
	for range 3 {
		if proto, body := do(h2c, "/fast"); proto != "HTTP/2.0" || body != "slow:/fast x HTTP/2.0 tls=true peers=0" {
			t.Fatalf("h2 /fast: %s %q", proto, body)
		}
	}
	st := ts.Stats()
	if st.Served != 3 || st.HandOffs["h2"] != 1 {
		t.Fatalf("stats %+v, want 3 served and 1 h2 connection handed off", st)
	}
}

// TestTLSClientCertificateRequired: with a client CA, a client without a
// certificate is refused at the handshake, whatever protocol it asks for,
// and nothing is served to it.
func TestTLSClientCertificateRequired(t *testing.T) {
	ts := startTLS(t, true, 0)
	for _, protos := range [][]string{{"http/1.1"}, {"h2"}, nil} {
		c, err := tls.Dial("tcp", ts.addr, ts.clientConfig(t, false, protos...))
		if err == nil {
			// TLS 1.3: the client learns of the refusal on its first read.
			_ = c.SetDeadline(time.Now().Add(10 * time.Second))
			_, _ = io.WriteString(c, post("/fast", "a"))
			var b []byte
			b, err = io.ReadAll(c)
			if err == nil {
				err = fmt.Errorf("read %q", b)
			}
			c.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("ALPN %q without a client certificate: %v, want a certificate error", protos, err)
		}
	}
	c := ts.dialTLS(t, ts.clientConfig(t, true, "http/1.1"))
	c.send(post("/fast", "a"))
	c.wantBody("fast:a")
	if st := ts.Stats(); st.Served != 1 {
		t.Fatalf("front served %d, want 1 (only the client with a certificate)", st.Served)
	}
}

// TestTLSClientCAReload: a client CA file replaced while serving is used
// for later handshakes (tlsconf's GetConfigForClient), behind the front as
// under net/http.
func TestTLSClientCAReload(t *testing.T) {
	ts := startTLS(t, true, 0)
	other := tlstest.NewCA(t)
	oc, ok := other.Issue(t, "client2")
	keys, err := tlsconf.LoadKeyPair(oc, ok, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := tlsconf.Client(ts.ca.CertFile, keys)
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	try := func() error {
		c, err := tls.Dial("tcp", ts.addr, cfg)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		_, _ = io.WriteString(c, post("/fast", "a"))
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		res.Body.Close()
		return nil
	}
	if err := try(); err == nil {
		t.Fatal("a certificate from another CA was accepted")
	}
	tlstest.WriteBundle(t, ts.clientCA, ts.ca, other)
	poll.UntilOK(t, 10*time.Second, "the new CA to be accepted", try)
}

// TestTLSPlainHTTPGets400: plain HTTP on the TLS port is answered as
// net/http answers it, and never served.
func TestTLSPlainHTTPGets400(t *testing.T) {
	ts := startTLS(t, false, 0)
	c := dial(t, ts.addr)
	c.send(post("/fast", "a"))
	res, _ := c.read()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d", res.StatusCode)
	}
	if st := ts.Stats(); st.Served != 0 {
		t.Fatalf("front served %d", st.Served)
	}
}

// TestTLSHandshakeTimeout: a client that connects and sends nothing (or
// half a handshake) is closed at the handshake timeout.
func TestTLSHandshakeTimeout(t *testing.T) {
	ts := startTLS(t, false, 300*time.Millisecond)
	dial(t, ts.addr).wantClosedWithin(5 * time.Second)
	c := dial(t, ts.addr)
	c.send("\x16\x03\x01\x00\x10") // a handshake record header, then silence
	c.wantClosedWithin(5 * time.Second)
}

// TestTLSNoH2WhenHTTPHasNone: ALPN offers h2 only when net/http will serve
// it; with HTTP/1.1 only, an h2-first client gets http/1.1 and the front.
func TestTLSNoH2WhenHTTPHasNone(t *testing.T) {
	ts := startTLS(t, false, 0)
	var p http.Protocols
	p.SetHTTP1(true)
	cfg, err := tlsconf.Server(ts.keys, "") // lists h2 (net/http writes to ts's own config)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{HTTP: &http.Server{Protocols: &p, TLSConfig: cfg}, Fast: ts.Fast}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.ServeTLS(ln) }()
	t.Cleanup(func() { _ = s.Close() })
	c, err := tls.Dial("tcp", ln.Addr().String(), ts.clientConfig(t, false, "h2", "http/1.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.ConnectionState().NegotiatedProtocol; got != "http/1.1" {
		t.Fatalf("negotiated %q, want http/1.1", got)
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	cl := &client{t: t, c: c, br: bufio.NewReader(c)}
	cl.send(post("/fast", "a"))
	cl.wantBody("fast:a")
}
