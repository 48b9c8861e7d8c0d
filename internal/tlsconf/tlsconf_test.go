package tlsconf_test

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

// serve accepts TLS connections on cfg and answers "ok" to each.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Write([]byte("ok"))
			}()
		}
	}()
	return ln.Addr().String()
}

// dial connects and reads the answer; it returns the server's leaf
// certificate's serial number.
func dial(addr string, cfg *tls.Config) (int64, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	if _, err := io.ReadAll(c); err != nil {
		return 0, err
	}
	return c.ConnectionState().PeerCertificates[0].SerialNumber.Int64(), nil
}

func TestReloadOnChange(t *testing.T) {
	ca := tlstest.NewCA(t)
	certFile, keyFile := ca.Issue(t, "server", "127.0.0.1")
	keys, err := tlsconf.LoadKeyPair(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	scfg, err := tlsconf.Server(keys, "")
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, scfg)
	ccfg, err := tlsconf.Client(ca.CertFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, err := dial(addr, ccfg)
	if err != nil {
		t.Fatal(err)
	}
	next := ca.IssueTo(t, certFile, keyFile, "server", "127.0.0.1").SerialNumber.Int64()
	poll.Until(t, 10*time.Second, "the renewed certificate served", func() bool {
		got, err := dial(addr, ccfg)
		if err != nil {
			t.Fatal(err)
		}
		if got != next && got != first {
			t.Fatalf("serial %d, want %d (the renewed certificate) after %d", got, next, first)
		}
		return got == next
	})
}

func TestMutual(t *testing.T) {
	ca := tlstest.NewCA(t)
	keys := func(name string, ca *tlstest.CA) *tlsconf.KeyPair {
		c, k := ca.Issue(t, name, "127.0.0.1")
		kp, err := tlsconf.LoadKeyPair(c, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	scfg, err := tlsconf.Mutual(keys("s1", ca), ca.CertFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	addr := serve(t, scfg)
	good, err := tlsconf.Mutual(keys("s2", ca), ca.CertFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dial(addr, good); err != nil {
		t.Fatalf("member refused: %v", err)
	}
	noCert, _ := tlsconf.Client(ca.CertFile, nil)
	if _, err := dial(addr, noCert); err == nil {
		t.Fatal("a client without a certificate was let in")
	}
	other := tlstest.NewCA(t)
	stranger, _ := tlsconf.Client(ca.CertFile, keys("x", other))
	if _, err := dial(addr, stranger); err == nil {
		t.Fatal("a certificate of another CA was let in")
	}
}
