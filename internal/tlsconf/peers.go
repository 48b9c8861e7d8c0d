package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
)

// ErrNotPeer is a certificate signed by the right CA that names no member.
var ErrNotPeer = errors.New("the certificate names no member of the cluster")

// Peers decides who may speak Raft: a certificate the CA signed is not
// enough, because hashicorp/raft believes the sender ID written in each
// message, so any holder of such a certificate (an allocsvr's client
// certificate, say) could claim to be the leader. A connection is let in
// only when its certificate names one of the names Peers gives now (a
// member's node ID or Raft host, in a DNS or IP SAN; a wildcard DNS SAN
// covering the name counts).
//
// The names come from a function set once the member's store is open (its
// live Raft configuration); until then, from the fixed list given to
// NewPeers (the flags' initial members and join target).
type Peers struct {
	initial []string
	names   atomic.Pointer[func() []string]
	logger  *slog.Logger
}

// NewPeers checks certificates against initial until Set is called. A nil
// logger means slog.Default().
func NewPeers(initial []string, logger *slog.Logger) *Peers {
	if logger == nil {
		logger = slog.Default()
	}
	return &Peers{initial: initial, logger: logger}
}

// Set makes names the source of the allowed names from now on.
func (p *Peers) Set(names func() []string) { p.names.Store(&names) }

// Names is the allowed set now.
func (p *Peers) Names() []string {
	if f := p.names.Load(); f != nil {
		return (*f)()
	}
	return p.initial
}

// Check is nil when cert names one of the allowed names.
func (p *Peers) Check(cert *x509.Certificate) error {
	names := p.Names()
	if Covers(cert, names) {
		return nil
	}
	return fmt.Errorf("%w (it names %s; members: %s)", ErrNotPeer, certNames(cert), strings.Join(names, ", "))
}

// Covers tells whether cert names one of names in a SAN: a DNS SAN (a
// wildcard one covers one label) or an IP SAN. The subject's CN is not
// read, as for every other TLS name check since Go 1.15.
func Covers(cert *x509.Certificate, names []string) bool {
	for _, n := range names {
		if n != "" && cert.VerifyHostname(n) == nil {
			return true
		}
	}
	return false
}

// verifyConnection is tls.Config.VerifyConnection for both ends of a Raft
// link: the certificate chain is verified by then, so what is left is
// whether the leaf names a member.
func (p *Peers) verifyConnection(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("raft peer presented no certificate")
	}
	if err := p.Check(cs.PeerCertificates[0]); err != nil {
		p.logger.Warn("raft connection refused", "err", err)
		return err
	}
	return nil
}

func certNames(c *x509.Certificate) string {
	var out []string
	out = append(out, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	if len(out) == 0 {
		return "no SAN, CN " + c.Subject.CommonName
	}
	return strings.Join(out, ", ")
}
