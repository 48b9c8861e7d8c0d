package main

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/serve"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/storage"
)

// memberSecurity is storesvr's own security flags: Raft over mutual TLS
// and the token a joining member presents.
type memberSecurity struct {
	RaftTLSCert, RaftTLSKey, RaftTLSCA string
	JoinTokenFile                      string
}

func (m *memberSecurity) register(fs *flag.FlagSet) {
	fs.StringVar(&m.RaftTLSCert, "raft-tls-cert", "", "PEM certificate for Raft between members over mutual TLS (with --raft-tls-key and --raft-tls-ca);\nit must name this member's --raft-addr host, and is re-read when it changes")
	fs.StringVar(&m.RaftTLSKey, "raft-tls-key", "", "PEM key of --raft-tls-cert")
	fs.StringVar(&m.RaftTLSCA, "raft-tls-ca", "", "CA of every member's Raft certificate; with --tls-cert it is also the CA trusted\nwhen calling other members' HTTPS API (forwarding, joining)")
	fs.StringVar(&m.JoinTokenFile, "join-token-file", "", "file holding the bearer token (role admin) presented with --join when the cluster has --auth-file;\nre-read when it changes")
}

func (m *memberSecurity) check() []error {
	set := 0
	for _, v := range []string{m.RaftTLSCert, m.RaftTLSKey, m.RaftTLSCA} {
		if v != "" {
			set++
		}
	}
	if set != 0 && set != 3 {
		return []error{errors.New("--raft-tls-cert, --raft-tls-key and --raft-tls-ca go together (Raft TLS is always mutual)")}
	}
	return nil
}

// raftTLS is the mutual TLS config of Raft, nil without --raft-tls-*.
// Both ends of every Raft connection must present a certificate that
// names a member (tlsconf.Peers): until the store is open and calls
// peers.Set with its live configuration, the members of --peers and the
// host of --join.
func (cfg *config) raftTLS(env serve.Env, peers []storage.Peer) (*tls.Config, *tlsconf.Peers, error) {
	if cfg.RaftTLSCert == "" {
		return nil, nil, nil
	}
	logger := env.Logger.With("component", "raft-tls")
	keys, err := tlsconf.LoadKeyPair(cfg.RaftTLSCert, cfg.RaftTLSKey, logger)
	if err != nil {
		return nil, nil, fmt.Errorf("--raft-tls-cert: %w", err)
	}
	if err := serve.RegisterCertExpiry(env.Registry, "raft", keys); err != nil {
		return nil, nil, err
	}
	var initial []string
	for _, p := range peers {
		initial = append(initial, p.ID, hostOf(p.RaftAddr))
	}
	if cfg.Join != "" {
		initial = append(initial, hostOf(cfg.Join))
	}
	check := tlsconf.NewPeers(initial, logger)
	tc, err := tlsconf.Mutual(keys, cfg.RaftTLSCA, check)
	if err != nil {
		return nil, nil, err
	}
	return tc, check, nil
}

// hostOf is the host of a host:port address (a URL's scheme dropped), ""
// if it has none.
func hostOf(addr string) string {
	if _, rest, ok := strings.Cut(addr, "://"); ok {
		addr = rest
	}
	host, _, err := net.SplitHostPort(strings.TrimSuffix(addr, "/"))
	if err != nil {
		return ""
	}
	return host
}

// memberClient is how this member calls the others' API (forwarding to
// the leader, joining): the storage default (h2c) on plain HTTP; under
// TLS, HTTPS trusting --raft-tls-ca (else --tls-client-ca, else the
// system roots) and presenting this member's --tls-cert. With
// --join-token-file, a call that carries no token (only the join: a
// forwarded call carries its caller's) gets the join token.
func (cfg *config) memberClient(env serve.Env) (*http.Client, error) {
	var rt http.RoundTripper
	if env.TLSKeys != nil {
		ca := cfg.RaftTLSCA
		if ca == "" {
			ca = cfg.Security.TLSClientCA
		}
		tc, err := tlsconf.Client(ca, env.TLSKeys)
		if err != nil {
			return nil, err
		}
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ForceAttemptHTTP2 = true
		rt = tlsconf.Transport(tr, tc) // follows the CA file when it changes
	} else {
		rt = storage.DefaultHTTPClient().Transport
	}
	if cfg.JoinTokenFile != "" {
		// Re-read when it changes: a rotated admin token needs no restart.
		tok, err := auth.OpenTokenFile(cfg.JoinTokenFile, env.Logger.With("component", "join-token"))
		if err != nil {
			return nil, fmt.Errorf("--join-token-file: %w", err)
		}
		rt = withToken{next: rt, token: tok.Token}
	}
	return &http.Client{Transport: rt}, nil
}

// withToken adds Authorization to requests that have none.
type withToken struct {
	next  http.RoundTripper
	token func() string
}

func (w withToken) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Authorization") != "" {
		return w.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+w.token())
	return w.next.RoundTrip(r)
}
