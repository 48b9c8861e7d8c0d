package tlsconf_test

import (
	"crypto/tls"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

// TestCovers: a certificate names a member by a DNS SAN equal to its ID or
// host, a wildcard DNS SAN over the host, or an IP SAN; the CN and a
// wildcard over more than one label do not count.
func TestCovers(t *testing.T) {
	ca := tlstest.NewCA(t)
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		hosts []string
		cn    string
		names []string
		want  bool
	}{
		{"id", []string{"s2"}, "x", []string{"s1", "s2"}, true},
		{"ip", []string{"10.0.0.7"}, "x", []string{"s1", "10.0.0.7"}, true},
		{"wildcard", []string{"*.seqsvr.ns.svc"}, "x", []string{"seqsvr-1.seqsvr.ns.svc"}, true},
		{"wildcard one label only", []string{"*.ns.svc"}, "x", []string{"seqsvr-1.seqsvr.ns.svc"}, false},
		{"client certificate", []string{"allocsvr"}, "allocsvr", []string{"s1", "s2", "127.0.0.1"}, false},
		{"cn is not read", nil, "s1", []string{"s1"}, false},
		{"other ip", []string{"10.0.0.8"}, "x", []string{"10.0.0.7"}, false},
		{"no names", []string{"s1"}, "x", nil, false},
	} {
		c := ca.IssueTo(t, filepath.Join(dir, "c.pem"), filepath.Join(dir, "c-key.pem"), tc.cn, tc.hosts...)
		if got := tlsconf.Covers(c, tc.names); got != tc.want {
			t.Errorf("%s: Covers(%v, %v) = %v, want %v", tc.name, tc.hosts, tc.names, got, tc.want)
		}
	}
}

// TestMutualPeers: over real TLS connections, a listener built with Peers
// lets in a member's certificate and refuses a client certificate of the
// same CA at the handshake; the names follow Set; and the dialing end
// refuses a server whose certificate names no member.
func TestMutualPeers(t *testing.T) {
	ca := tlstest.NewCA(t)
	keys := func(name string, hosts ...string) *tlsconf.KeyPair {
		c, k := ca.Issue(t, name, hosts...)
		kp, err := tlsconf.LoadKeyPair(c, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		return kp
	}
	mutual := func(kp *tlsconf.KeyPair, p *tlsconf.Peers) *tls.Config {
		cfg, err := tlsconf.Mutual(kp, ca.CertFile, p)
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	serverPeers := tlsconf.NewPeers([]string{"s1", "s2"}, nil)
	addr := serve(t, mutual(keys("s1", "s1", "127.0.0.1"), serverPeers))

	member := mutual(keys("s2", "s2", "127.0.0.1"), tlsconf.NewPeers([]string{"s1", "127.0.0.1"}, nil))
	if _, err := dial(addr, member); err != nil {
		t.Fatalf("a member was refused: %v", err)
	}
	// The allocsvr's client certificate: the right CA, no member's name.
	client, err := tlsconf.Client(ca.CertFile, keys("allocsvr", "allocsvr"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dial(addr, client); err == nil || !strings.Contains(err.Error(), "bad certificate") {
		t.Fatalf("a client certificate naming no member: %v, want a bad certificate alert", err)
	}
	serverPeers.Set(func() []string { return []string{"s1", "s3"} })
	if _, err := dial(addr, member); err == nil {
		t.Fatal("s2 let in after it left the configuration")
	}
	serverPeers.Set(func() []string { return []string{"s1", "s2"} })
	if _, err := dial(addr, member); err != nil {
		t.Fatalf("s2 refused once back in the configuration: %v", err)
	}

	// The dialing end: a server with a certificate of the CA for the host
	// dialed, but naming no member, is refused before anything is sent.
	stranger := serve(t, mutual(keys("x", "x", "127.0.0.1"), tlsconf.NewPeers([]string{"s2"}, nil)))
	onlyS1 := mutual(keys("s2b", "s2", "127.0.0.1"), tlsconf.NewPeers([]string{"s1"}, nil))
	if _, err := dial(stranger, onlyS1); !errors.Is(err, tlsconf.ErrNotPeer) {
		t.Fatalf("dialing a server that names no member: %v, want ErrNotPeer", err)
	}
}
