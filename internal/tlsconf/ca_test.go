package tlsconf_test

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

func keyPair(t *testing.T, ca *tlstest.CA, name string) *tlsconf.KeyPair {
	t.Helper()
	c, k := ca.Issue(t, name, "127.0.0.1")
	kp, err := tlsconf.LoadKeyPair(c, k, nil)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// TestServerFollowsClientCA: a server requiring client certificates takes
// a rotated --tls-client-ca without a restart, on a real TLS listener.
func TestServerFollowsClientCA(t *testing.T) {
	oldCA, newCA := tlstest.NewCA(t), tlstest.NewCA(t)
	caFile := filepath.Join(t.TempDir(), "client-ca.pem")
	tlstest.WriteBundle(t, caFile, oldCA)
	scfg, err := tlsconf.Server(keyPair(t, oldCA, "server"), caFile)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, scfg)
	client := func(ca *tlstest.CA) *tls.Config {
		c, err := tlsconf.Client(oldCA.CertFile, keyPair(t, ca, "client"))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	oldClient, newClient := client(oldCA), client(newCA)
	if _, err := dial(addr, oldClient); err != nil {
		t.Fatalf("client of the CA in force refused: %v", err)
	}
	if _, err := dial(addr, newClient); err == nil {
		t.Fatal("client of a CA not (yet) in the file let in")
	}
	tlstest.WriteBundle(t, caFile, newCA) // the old CA retired
	poll.UntilOK(t, 10*time.Second, "client of the new CA", func() error { _, err := dial(addr, newClient); return err })
	if _, err := dial(addr, oldClient); err == nil {
		t.Fatal("client of the retired CA still let in")
	}
}

// TestClientFollowsRootCA: a client (Current, and Transport over a real
// HTTPS server) trusts a rotated CA file without being rebuilt.
func TestClientFollowsRootCA(t *testing.T) {
	oldCA, newCA := tlstest.NewCA(t), tlstest.NewCA(t)
	scfg, err := tlsconf.Server(keyPair(t, newCA, "server"), "")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", scfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(r.Proto)) }), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()

	caFile := filepath.Join(t.TempDir(), "ca.pem")
	tlstest.WriteBundle(t, caFile, oldCA)
	ccfg, err := tlsconf.Client(caFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.ForceAttemptHTTP2 = true
	hc := &http.Client{Transport: tlsconf.Transport(base, ccfg), Timeout: 5 * time.Second}
	get := func() error {
		resp, err := hc.Get("https://" + addr + "/")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.Proto != "HTTP/2.0" {
			t.Errorf("proto %s, want HTTP/2.0 (ALPN kept through the reloading transport)", resp.Proto)
		}
		return nil
	}
	if err := get(); err == nil {
		t.Fatal("server of an untrusted CA accepted")
	}
	if _, err := dial(addr, tlsconf.Current(ccfg)); err == nil {
		t.Fatal("server of an untrusted CA accepted by a dial")
	}
	tlstest.WriteBundle(t, caFile, oldCA, newCA)
	poll.UntilOK(t, 10*time.Second, "HTTPS through Transport", get)
	poll.UntilOK(t, 10*time.Second, "dial with Current", func() error {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, tlsconf.Current(ccfg))
		if err == nil {
			c.Close()
		}
		return err
	})
}

// TestCAKeepsPoolOnBadFile: a CA file replaced by garbage keeps the pool
// in force, and is logged once, not at every recheck.
func TestCAKeepsPoolOnBadFile(t *testing.T) {
	ca := tlstest.NewCA(t)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	tlstest.WriteBundle(t, caFile, ca)
	var log bytes.Buffer
	c, err := tlsconf.LoadCA(caFile, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now()
	tlsconf.SetNow(c, func() time.Time { return later })
	first := c.Pool()
	tlstest.WriteBundle(t, caFile) // empty: no certificate
	checkedThrice(t, &log, func() {
		later = later.Add(2 * time.Second)
		if c.Pool() != first {
			t.Fatal("a CA file without certificates replaced the pool")
		}
	})
	if _, err := tlsconf.LoadCA(caFile, nil); err == nil {
		t.Fatal("LoadCA accepted a file without certificates")
	}
	tlstest.WriteBundle(t, caFile, ca, tlstest.NewCA(t))
	later = later.Add(2 * time.Second)
	if c.Pool() == first {
		t.Fatal("a good CA file after a bad one was not loaded")
	}
}

// TestKeyPairKeepsCertOnBadFile: a certificate file replaced by garbage
// keeps the pair in force and is logged once, not at every recheck; a
// good pair written after it is loaded.
func TestKeyPairKeepsCertOnBadFile(t *testing.T) {
	ca := tlstest.NewCA(t)
	certFile, keyFile := ca.Issue(t, "server", "127.0.0.1")
	var log bytes.Buffer
	k, err := tlsconf.LoadKeyPair(certFile, keyFile, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now()
	tlsconf.SetKeyPairNow(k, func() time.Time { return later })
	first := k.Current()
	if err := os.WriteFile(certFile, []byte("half a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	checkedThrice(t, &log, func() {
		later = later.Add(2 * time.Second)
		if k.Current() != first {
			t.Fatal("a bad certificate file replaced the pair")
		}
	})
	ca.IssueTo(t, certFile, keyFile, "server", "127.0.0.1")
	later = later.Add(2 * time.Second)
	if k.Current() == first {
		t.Fatal("a good pair after a bad one was not loaded")
	}
}

// checkedThrice runs check (a recheck of one bad file) three times and
// wants one error in log for all of them.
func checkedThrice(t *testing.T, log *bytes.Buffer, check func()) {
	t.Helper()
	for range 3 {
		check()
	}
	if n := strings.Count(log.String(), "level=ERROR"); n != 1 {
		t.Errorf("%d errors logged for one bad file checked three times, want 1:\n%s", n, log.String())
	}
}
