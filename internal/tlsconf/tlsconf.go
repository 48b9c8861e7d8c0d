// Package tlsconf builds seqsvr's TLS configurations, defined once: the API
// server's (HTTPS with HTTP/1.1 and h2 by ALPN, optional client
// certificates), the clients' (a CA to trust, the process's own certificate
// presented when the peer asks for one) and Raft's mutual TLS.
//
// Guarantees:
//   - TLS 1.2 at least.
//   - A certificate and key pair is read again when either file's
//     modification time or size changes, checked at most once a second on a
//     handshake; a pair that does not load keeps the old one in force (and
//     is logged), so a half-written renewal never takes a server down.
//   - CA files are read once, at start.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// MinVersion is the oldest TLS version spoken.
const MinVersion = tls.VersionTLS12

// Server is the API server's configuration: the pair from keys, ALPN h2
// then http/1.1, and, with a clientCA file, client certificates required
// and verified against it.
func Server(keys *KeyPair, clientCA string) (*tls.Config, error) {
	c := &tls.Config{
		MinVersion:     MinVersion,
		GetCertificate: keys.GetCertificate,
		NextProtos:     []string{"h2", "http/1.1"},
	}
	if clientCA != "" {
		pool, err := LoadCA(clientCA)
		if err != nil {
			return nil, err
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// Client trusts the CA in caFile (none: the system roots) and, with keys,
// presents that pair to servers that ask for a client certificate.
func Client(caFile string, keys *KeyPair) (*tls.Config, error) {
	c := &tls.Config{MinVersion: MinVersion}
	if caFile != "" {
		pool, err := LoadCA(caFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = pool
	}
	if keys != nil {
		c.GetClientCertificate = keys.GetClientCertificate
	}
	return c, nil
}

// Mutual is both sides of a link where each end proves itself to the
// other with a certificate of the CA in caFile: Raft between members.
// Certificates must name the address peers dial (an IP SAN for an IP).
func Mutual(keys *KeyPair, caFile string) (*tls.Config, error) {
	if keys == nil || caFile == "" {
		return nil, errors.New("mutual TLS needs a certificate, a key and a CA")
	}
	pool, err := LoadCA(caFile)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:           MinVersion,
		GetCertificate:       keys.GetCertificate,
		GetClientCertificate: keys.GetClientCertificate,
		RootCAs:              pool,
		ClientCAs:            pool,
		ClientAuth:           tls.RequireAndVerifyClientCert,
	}, nil
}

// LoadCA reads PEM certificates into a pool.
func LoadCA(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", path)
	}
	return pool, nil
}
