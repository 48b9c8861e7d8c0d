package launch

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
)

// Security is the secure mode of a cluster (Options.Security): a CA made
// for the run, the members' certificate (server and client use, valid for
// the hosts given), the allocsvrs' own (one to serve, for the hosts and
// server use only; one they present to the stores, naming nothing: a
// member refuses both on its Raft port), an auth file with one token per role, the
// allocsvrs' store token file. With it every process serves HTTPS only
// (h2 by ALPN), requires a token on every RPC, and the stores require a
// client certificate and talk Raft over mutual TLS; the cluster's own
// clients present the certificate and the right token.
type Security struct {
	Dir                       string
	CAFile, CertFile, KeyFile string
	// AllocCertFile and AllocKeyFile: the allocsvrs' client certificate
	// (no SAN, client use only); AllocServeCertFile and AllocServeKeyFile:
	// the one they serve with (the hosts, server use only).
	AllocCertFile, AllocKeyFile           string
	AllocServeCertFile, AllocServeKeyFile string
	AuthFile, AllocTokenFile              string
	AdminTokenFile                        string
	AdminToken, AllocToken                string
	ClientToken                           string

	ca *certIssuer // Renew's
}

// NewSecurity writes a CA, the certificates for hosts (IP SANs for addresses,
// DNS SANs otherwise; 127.0.0.1 and localhost are always included), the
// auth file and the token file under dir. The keys are fresh random ones:
// nothing made here outlives the run.
func NewSecurity(dir string, hosts ...string) (*Security, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &Security{
		Dir:                dir,
		CAFile:             filepath.Join(dir, "ca.pem"),
		CertFile:           filepath.Join(dir, "node.pem"),
		KeyFile:            filepath.Join(dir, "node-key.pem"),
		AllocCertFile:      filepath.Join(dir, "alloc-client.pem"),
		AllocKeyFile:       filepath.Join(dir, "alloc-client-key.pem"),
		AllocServeCertFile: filepath.Join(dir, "alloc.pem"),
		AllocServeKeyFile:  filepath.Join(dir, "alloc-key.pem"),
		AuthFile:           filepath.Join(dir, "auth.json"),
		AllocTokenFile:     filepath.Join(dir, "alloc.token"),
		AdminTokenFile:     filepath.Join(dir, "admin.token"),
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "seqsvr cluster CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(7 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	var ips []net.IP
	var dns []string
	seen := map[string]bool{}
	for _, h := range append([]string{"127.0.0.1", "localhost"}, hosts...) {
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
		} else {
			dns = append(dns, h)
		}
	}
	s.ca = &certIssuer{cert: caCert, key: caKey, ips: ips, dns: dns}
	leaves, err := s.ca.leaves(now.Add(7 * 24 * time.Hour))
	if err != nil {
		return nil, err
	}
	for _, tok := range []*string{&s.AdminToken, &s.AllocToken, &s.ClientToken} {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		*tok = hex.EncodeToString(b)
	}
	type entry struct {
		Name  string   `json:"name"`
		Token string   `json:"token"`
		Roles []string `json:"roles"`
	}
	auth, err := json.MarshalIndent([]entry{
		{"harness-admin", s.AdminToken, []string{"admin"}},
		{"allocsvr", s.AllocToken, []string{"alloc"}},
		{"harness-client", s.ClientToken, []string{"client"}},
	}, "", "  ")
	if err != nil {
		return nil, err
	}
	files := []struct {
		path string
		body []byte
	}{
		{s.CAFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})},
		{s.AuthFile, auth},
		{s.AllocTokenFile, []byte(s.AllocToken + "\n")},
		{s.AdminTokenFile, []byte(s.AdminToken + "\n")},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, f.body, 0o600); err != nil {
			return nil, err
		}
	}
	if err := s.writeLeaves(leaves); err != nil {
		return nil, err
	}
	return s, nil
}

// Renew issues the members' and the allocsvrs' certificates again, from
// the same CA and for the same hosts, valid until notAfter, and writes
// them over the old files, as an operator renewing certificates does
// (the processes re-read them; no restart).
func (s *Security) Renew(notAfter time.Time) error {
	leaves, err := s.ca.leaves(notAfter)
	if err != nil {
		return err
	}
	return s.writeLeaves(leaves)
}

// writeLeaves writes each certificate and key of leaves (certIssuer.leaves'
// order: the members', the allocsvrs' serving and client ones), each key
// before its certificate so that a reader of a new certificate finds its key.
func (s *Security) writeLeaves(leaves [3][2][]byte) error {
	for i, paths := range [3][2]string{{s.CertFile, s.KeyFile}, {s.AllocServeCertFile, s.AllocServeKeyFile}, {s.AllocCertFile, s.AllocKeyFile}} {
		for _, j := range []int{1, 0} {
			if err := writeFileAtomic(paths[j], leaves[i][j]); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeFileAtomic replaces path by a file holding body (a rename: a
// process re-reading it never sees half of it).
func writeFileAtomic(path string, body []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, body, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// certIssuer is the run's CA and the hosts its certificates name.
type certIssuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	ips  []net.IP
	dns  []string
	next int64 // the last serial issued
}

// leaves issues the three leaf certificates, valid until notAfter, each
// as {certificate, key} in PEM: the members' (API and Raft, server and
// client use); the allocsvrs' serving one (server use only) and client
// one (client use only, no SAN): neither of the allocsvrs' can pass a
// member's Raft check (tlsconf.Peers).
func (ci *certIssuer) leaves(notAfter time.Time) (out [3][2][]byte, err error) {
	for i, l := range []struct {
		cn   string
		sans bool
		use  []x509.ExtKeyUsage
	}{
		{"seqsvr node", true, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}},
		{"seqsvr allocsvr", true, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}},
		{"seqsvr allocsvr client", false, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}},
	} {
		if out[i][0], out[i][1], err = ci.issue(l.cn, l.sans, notAfter, l.use...); err != nil {
			return out, err
		}
	}
	return out, nil
}

func (ci *certIssuer) issue(cn string, sans bool, notAfter time.Time, use ...x509.ExtKeyUsage) (cert, key []byte, err error) {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	ci.next++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(ci.next + 1),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  use,
	}
	if sans {
		tmpl.IPAddresses, tmpl.DNSNames = ci.ips, ci.dns
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ci.cert, &k.PublicKey, ci.key)
	if err != nil {
		return nil, nil, err
	}
	kb, err := x509.MarshalECPrivateKey(k)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), nil
}

// storeArgs and allocArgs are the secure-mode flags of each binary.
func (s *Security) storeArgs() []string {
	return []string{"--auth-file", s.AuthFile, "--tls-cert", s.CertFile, "--tls-key", s.KeyFile, "--tls-client-ca", s.CAFile,
		"--raft-tls-cert", s.CertFile, "--raft-tls-key", s.KeyFile, "--raft-tls-ca", s.CAFile}
}

func (s *Security) allocArgs() []string {
	return []string{"--auth-file", s.AuthFile, "--tls-cert", s.AllocServeCertFile, "--tls-key", s.AllocServeKeyFile,
		"--store-cert", s.AllocCertFile, "--store-key", s.AllocKeyFile,
		"--store-token-file", s.AllocTokenFile, "--store-ca", s.CAFile}
}

// client is an HTTP client that trusts the CA, presents the certificate
// and sends token on every request.
func (s *Security) client(token string, timeout time.Duration) (*http.Client, error) {
	keys, err := tlsconf.LoadKeyPair(s.CertFile, s.KeyFile, nil)
	if err != nil {
		return nil, err
	}
	cfg, err := tlsconf.Client(s.CAFile, keys)
	if err != nil {
		return nil, fmt.Errorf("cluster: TLS client: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig, tr.ForceAttemptHTTP2 = cfg, true
	return &http.Client{Transport: auth.BearerTransport(token, tr), Timeout: timeout}, nil
}
