package raftconf

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/seqsvr/seqsvr/internal/tlsconf"
)

// NewTLSTransport is NewTransport over TLS: every connection between
// members is TLS with cfg (build it with tlsconf.Mutual so both ends
// present and verify certificates, with tlsconf.Peers so a certificate
// must also name a member), with the same pool and timeout.
// advertise nil means the bound address.
func NewTLSTransport(bind string, advertise net.Addr, cfg *tls.Config, logger hclog.Logger) (*Transport, error) {
	stream, err := newTLSStream(bind, advertise, cfg)
	if err != nil {
		return nil, err
	}
	return &Transport{raft.NewNetworkTransportWithConfig(transportConfig(stream, logger))}, nil
}

// tlsStream is a raft.StreamLayer of TLS connections on a TCP listener.
type tlsStream struct {
	ln        net.Listener
	advertise net.Addr
	cfg       *tls.Config
}

func newTLSStream(bind string, advertise net.Addr, cfg *tls.Config) (*tlsStream, error) {
	if cfg == nil {
		return nil, errors.New("raftconf: TLS transport without a TLS config")
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, err
	}
	if advertise == nil {
		advertise = ln.Addr()
	}
	// Peers must be able to dial what is advertised, as raft's TCP
	// transport requires.
	if a, ok := advertise.(*net.TCPAddr); !ok || a.IP == nil || a.IP.IsUnspecified() {
		ln.Close()
		return nil, fmt.Errorf("raftconf: advertise address %v is not dialable", advertise)
	}
	return &tlsStream{ln: tls.NewListener(ln, cfg), advertise: advertise, cfg: cfg}, nil
}

// Dial connects to a member, checking its certificate names the host
// dialed (and, with the config's tlsconf.Peers, a member), and finishes the handshake within timeout so a peer that is not
// speaking TLS costs one timeout, not a hung replication.
func (s *tlsStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	host, _, err := net.SplitHostPort(string(address))
	if err != nil {
		return nil, err
	}
	// Current: the CA pool as --raft-tls-ca holds it now, so a rotated CA
	// is trusted by the next dial without a restart.
	cfg := tlsconf.Current(s.cfg).Clone()
	cfg.ServerName = host
	d := &tls.Dialer{NetDialer: &net.Dialer{Timeout: timeout}, Config: cfg}
	return d.Dial("tcp", string(address))
}

// Accept returns the next connection; its handshake runs on first use,
// in raft's goroutine for that connection, not in the accept loop.
func (s *tlsStream) Accept() (net.Conn, error) { return s.ln.Accept() }

func (s *tlsStream) Close() error   { return s.ln.Close() }
func (s *tlsStream) Addr() net.Addr { return s.advertise }
