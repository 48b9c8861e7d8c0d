package main

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/alloc/seq"
	"github.com/seqsvr/seqsvr/alloc/storeclient"
	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/serve"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
)

// peerAccess is how the allocsvr calls the store and other allocsvrs:
// the --store-token-file token on every call (role alloc: it includes
// client, so per-key calls forwarded to another allocsvr pass that one's
// --auth-file too), and TLS trusting --store-ca (else --tls-client-ca,
// else the system roots) while presenting the allocsvr's --store-cert
// (else its --tls-cert) to servers that ask for a client certificate.
type peerAccess struct {
	token *auth.TokenFile // nil: no token
	tls   *tls.Config
}

func (cfg *config) peerAccess(env serve.Env) (peerAccess, error) {
	var p peerAccess
	if cfg.StoreTokenFile != "" {
		// Re-read when it changes: a rotated token needs no restart.
		tok, err := auth.OpenTokenFile(cfg.StoreTokenFile, env.Logger.With("component", "store-token"))
		if err != nil {
			return p, fmt.Errorf("--store-token-file: %w", err)
		}
		p.token = tok
	} else if env.Auth != nil {
		env.Logger.Warn("--auth-file without --store-token-file: per-key calls forwarded to other allocsvrs carry no token and are refused by them")
	}
	ca := cfg.StoreCA
	if ca == "" {
		ca = cfg.Security.TLSClientCA
	}
	keys := env.TLSKeys
	if err := serve.RegisterCertExpiry(env.Registry, "serving", env.TLSKeys); err != nil {
		return p, err
	}
	if cfg.StoreCert != "" {
		var err error
		if keys, err = tlsconf.LoadKeyPair(cfg.StoreCert, cfg.StoreKey, env.Logger.With("component", "store-tls")); err != nil {
			return p, fmt.Errorf("--store-cert: %w", err)
		}
		if err := serve.RegisterCertExpiry(env.Registry, "client", keys); err != nil {
			return p, err
		}
	}
	tc, err := tlsconf.Client(ca, keys)
	if err != nil {
		return p, fmt.Errorf("--store-ca: %w", err)
	}
	p.tls = tc
	return p, nil
}

// httpClient is a pooled client with p's TLS, for a seq.Node's calls to
// its peers.
func (p peerAccess) httpClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = seq.PeerIdleConnsPerHost
	// Follows --store-ca when it changes (a CA rotation needs no restart).
	return &http.Client{Transport: tlsconf.Transport(tr, p.tls)}
}

// clientOptions send p's token.
func (p peerAccess) clientOptions() []connect.ClientOption {
	if p.token == nil {
		return nil
	}
	return []connect.ClientOption{connect.WithInterceptors(auth.BearerFrom(p.token.Token))}
}

// storeClient is storeclient's own HTTP/1.1 client (the cheap one under
// many concurrent reservations) with p's TLS: it dials with
// tlsconf.Current(p.tls), so a --store-ca rotation is followed without a
// restart (TestStoreClientFollowsStoreCA).
func (cfg *config) storeClient(p peerAccess, logger *slog.Logger) (*storeclient.Client, error) {
	opts := storeclient.Options{
		Logger:         logger.With("component", "storeclient"),
		RequestTimeout: cfg.StoreRequestTimeout,
		TLS:            p.tls,
		DataDir:        cfg.DataDir,
	}
	if p.token != nil {
		opts.TokenFunc = p.token.Token
	}
	store, err := storeclient.New(cfg.Stores, opts)
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	return store, nil
}
