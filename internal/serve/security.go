package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
)

// Security holds the flags of access control and API TLS, both binaries.
type Security struct {
	AuthFile    string
	TLSCert     string
	TLSKey      string
	TLSClientCA string
}

// Register adds --auth-file, --tls-cert, --tls-key and --tls-client-ca.
func (s *Security) Register(fs *flag.FlagSet) {
	fs.StringVar(&s.AuthFile, "auth-file", "", "JSON list of bearer tokens and their roles: [{\"name\":..., \"token\":..., \"roles\":[\"client\"|\"alloc\"|\"admin\"]}];\nre-read when it changes (checked every second) and on SIGHUP. Unset: every call is open (a warning is logged)")
	fs.StringVar(&s.TLSCert, "tls-cert", "", "PEM certificate: serve HTTPS (HTTP/1.1 and h2 by ALPN) instead of plain HTTP; re-read when it changes.\nAlso presented as the client certificate on calls to other seqsvr processes")
	fs.StringVar(&s.TLSKey, "tls-key", "", "PEM key of --tls-cert")
	fs.StringVar(&s.TLSClientCA, "tls-client-ca", "", "require client certificates signed by this CA (mutual TLS; needs --tls-cert)")
}

// Check returns the problems with the parsed values.
func (s *Security) Check() []error {
	var errs []error
	if (s.TLSCert == "") != (s.TLSKey == "") {
		errs = append(errs, errors.New("--tls-cert and --tls-key go together"))
	}
	if s.TLSClientCA != "" && s.TLSCert == "" {
		errs = append(errs, errors.New("--tls-client-ca needs --tls-cert (client certificates are a TLS feature)"))
	}
	return errs
}

// TLS reports whether the API is served over TLS.
func (s *Security) TLS() bool { return s.TLSCert != "" }

// loadSecurity loads the auth file and the API certificate. Without an
// auth file it logs the warning the contract asks for and returns a nil
// Authorizer (every call open).
func loadSecurity(s Security, logger *slog.Logger) (*auth.Authorizer, *tlsconf.KeyPair, *tls.Config, error) {
	var a *auth.Authorizer
	if s.AuthFile == "" {
		logger.Warn("no --auth-file: every API call is open to anyone who reaches the port, admin ones included (DeleteTag, RemoveMember)")
	} else {
		var err error
		if a, err = auth.New(s.AuthFile); err != nil {
			return nil, nil, nil, err
		}
		logger.Info("access control on", "auth_file", s.AuthFile, "tokens", a.Len())
	}
	if !s.TLS() {
		return a, nil, nil, nil
	}
	keys, err := tlsconf.LoadKeyPair(s.TLSCert, s.TLSKey, logger)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, err := tlsconf.Server(keys, s.TLSClientCA)
	if err != nil {
		return nil, nil, nil, err
	}
	return a, keys, cfg, nil
}

// reloadOnHUP re-reads the auth file when it changes on disk (looked at
// every second: a rotated Kubernetes Secret or a rewritten file takes
// effect with no signal, which the kubelet never sends) and on every
// SIGHUP, until ctx ends. A file that does not load keeps the tokens in
// force and is logged once per change.
func reloadOnHUP(ctx context.Context, a *auth.Authorizer, logger *slog.Logger) {
	if a == nil {
		return
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	tick := time.NewTicker(authRecheck)
	go func() {
		defer signal.Stop(hup)
		defer tick.Stop()
		for {
			var err error
			select {
			case <-ctx.Done():
				return
			case <-hup:
				err = a.Reload()
			case <-tick.C:
				var changed bool
				if changed, err = a.ReloadIfChanged(); !changed {
					continue
				}
			}
			if err != nil {
				logger.Error("auth file not reloaded; the previous tokens stay in force", "auth_file", a.Path(), "err", err)
				continue
			}
			logger.Info("auth file reloaded", "auth_file", a.Path(), "tokens", a.Len())
		}
	}()
}

// authRecheck is how often the auth file is looked at for a change.
const authRecheck = time.Second
