package launch

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// NewSecurity's files are what the servers load: a certificate that
// chains to the CA for every host asked for (and loopback), and an auth
// file whose three tokens hold exactly their roles.
func TestNewSecurity(t *testing.T) {
	s, err := NewSecurity(t.TempDir(), "10.100.1.2", "node.example")
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	caPEM, err := os.ReadFile(s.CAFile)
	if err != nil || !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("CA %s: %v", s.CAFile, err)
	}
	b, err := os.ReadFile(s.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"127.0.0.1", "localhost", "10.100.1.2", "node.example"} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, DNSName: h, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("host %s: %v", h, err)
		}
	}
	if err := cert.VerifyHostname("10.100.1.3"); err == nil {
		t.Error("certificate valid for a host not asked for")
	}
	// The allocsvrs' certificates: neither is a client certificate that
	// names a member's host (a member's Raft port would let it in).
	for _, f := range []string{s.AllocServeCertFile, s.AllocCertFile} {
		c := parseCert(t, f)
		clientUse := c.ExtKeyUsage == nil || slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
		if clientUse && (len(c.DNSNames) > 0 || len(c.IPAddresses) > 0) {
			t.Errorf("%s: client use and names %v %v", f, c.DNSNames, c.IPAddresses)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, err := parseCert(t, s.AllocServeCertFile).Verify(x509.VerifyOptions{Roots: pool, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("the allocsvrs' serving certificate: %v", err)
	}

	a, err := auth.New(s.AuthFile)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := os.ReadFile(s.AllocTokenFile)
	if err != nil || string(tok) != s.AllocToken+"\n" {
		t.Fatalf("alloc token file: %q, %v", tok, err)
	}
	for _, c := range []struct {
		token  string
		role   auth.Role
		denied bool
	}{
		{s.ClientToken, auth.Client, false}, {s.ClientToken, auth.Alloc, true},
		{s.AllocToken, auth.Alloc, false}, {s.AllocToken, auth.Admin, true},
		{s.AdminToken, auth.Admin, false},
	} {
		_, err := a.CheckRole("Bearer "+c.token, c.role, "test")
		if got := errors.Is(err, errs.PermissionDenied); got != c.denied || (!c.denied && err != nil) {
			t.Errorf("token for role %v: err %v, want denied=%v", c.role, err, c.denied)
		}
	}
}

func parseCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
