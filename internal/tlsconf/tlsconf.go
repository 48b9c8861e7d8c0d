// Package tlsconf builds seqsvr's TLS configurations, defined once: the API
// server's (HTTPS with HTTP/1.1 and h2 by ALPN, optional client
// certificates), the clients' (a CA to trust, the process's own certificate
// presented when the peer asks for one) and Raft's mutual TLS.
//
// Guarantees:
//   - TLS 1.2 at least.
//   - A certificate and key pair is read again when either file changes
//     (modification time, size or contents: a same-size rewrite within one
//     timestamp tick counts), checked at most once a second on a
//     handshake; a pair that does not load keeps the old one in force (and
//     is logged), so a half-written renewal never takes a server down.
//   - A CA file is read again the same way (CA): a server built here takes
//     the current client CA pool on each handshake (GetConfigForClient), a
//     Raft dial and a client through Transport take the current root pool
//     on each new connection. Connections already open are not re-verified.
//   - Raft's mutual TLS with Peers lets in, at both ends, only a
//     certificate that names a member (a CA-signed certificate is not
//     enough: raft believes the sender ID each message claims).
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"log/slog"
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
		ca, err := LoadCA(clientCA, keys.logger)
		if err != nil {
			return nil, err
		}
		c.ClientAuth = tls.RequireAndVerifyClientCert
		return withCA(c, ca, func(c *tls.Config, p *x509.CertPool) { c.ClientCAs = p }), nil
	}
	return c, nil
}

// Client trusts the CA in caFile (none: the system roots) and, with keys,
// presents that pair to servers that ask for a client certificate. The
// config holds the pool read at start; dial with Current(config), or use
// Transport, to follow changes of caFile.
func Client(caFile string, keys *KeyPair) (*tls.Config, error) {
	c := &tls.Config{MinVersion: MinVersion}
	if keys != nil {
		c.GetClientCertificate = keys.GetClientCertificate
	}
	if caFile == "" {
		return c, nil
	}
	logger := slog.Default()
	if keys != nil {
		logger = keys.logger
	}
	ca, err := LoadCA(caFile, logger)
	if err != nil {
		return nil, err
	}
	return withCA(c, ca, func(c *tls.Config, p *x509.CertPool) { c.RootCAs = p }), nil
}

// Mutual is both sides of a link where each end proves itself to the
// other with a certificate of the CA in caFile: Raft between members.
// Certificates must name the address peers dial (an IP SAN for an IP).
// With peers, both ends also refuse a certificate that names none of its
// names (Peers); nil trusts every certificate of the CA, which only a
// test or a benchmark may want. Listen with the config as it is; dial
// with Current(config), so both sides follow changes of caFile.
func Mutual(keys *KeyPair, caFile string, peers *Peers) (*tls.Config, error) {
	if keys == nil || caFile == "" {
		return nil, errors.New("mutual TLS needs a certificate, a key and a CA")
	}
	ca, err := LoadCA(caFile, keys.logger)
	if err != nil {
		return nil, err
	}
	c := &tls.Config{
		MinVersion:           MinVersion,
		GetCertificate:       keys.GetCertificate,
		GetClientCertificate: keys.GetClientCertificate,
		ClientAuth:           tls.RequireAndVerifyClientCert,
	}
	if peers != nil {
		c.VerifyConnection = peers.verifyConnection
	}
	return withCA(c, ca, func(c *tls.Config, p *x509.CertPool) { c.RootCAs, c.ClientCAs = p, p }), nil
}
