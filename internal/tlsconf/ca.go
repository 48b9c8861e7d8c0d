package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// CA is a PEM file of CA certificates read again when it changes, so a CA
// can be rotated (add the new CA to the file, re-issue, drop the old CA)
// without restarting anything. Like KeyPair, the file is looked at on a
// handshake, at most once a second; a file that does not load keeps the
// old pool in force and is logged.
type CA struct {
	path   string
	logger *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	pool    *x509.CertPool
	stamp   fileStamp
	checked time.Time
	// failed is the file as it was when it last did not load: the same
	// bad file is neither parsed nor logged again every second.
	failed fileStamp
}

// LoadCA reads the CA file; it fails if it holds no PEM certificate now.
// A nil logger means slog.Default().
func LoadCA(path string, logger *slog.Logger) (*CA, error) {
	if logger == nil {
		logger = slog.Default()
	}
	c := &CA{path: path, logger: logger, now: time.Now}
	stamp, err := statFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool, err := readCA(path)
	if err != nil {
		return nil, err
	}
	c.pool, c.stamp, c.checked = pool, stamp, c.now()
	return c, nil
}

// Pool is the pool in force, read again first if the file changed. The
// same pointer comes back until the file changes, so callers may cache
// what they build from it.
func (c *CA) Pool() *x509.CertPool {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if now.Sub(c.checked) < recheck {
		return c.pool
	}
	c.checked = now
	stamp, err := statFile(c.path)
	if err != nil || stamp == c.stamp || stamp == c.failed {
		return c.pool
	}
	pool, err := readCA(c.path)
	if err != nil {
		c.failed = stamp
		c.logger.Error("CA file changed but does not load; keeping the old one", "ca", c.path, "err", err)
		return c.pool
	}
	c.pool, c.stamp, c.failed = pool, stamp, fileStamp{}
	c.logger.Info("CA file reloaded", "ca", c.path)
	return c.pool
}

func readCA(path string) (*x509.CertPool, error) {
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

// withCA makes out follow ca: out.GetConfigForClient hands each handshake
// a copy of out whose pool fields (set by apply) hold ca's current pool,
// built once per pool. It ignores its argument, so Current can call it
// with nil to get the configuration a dialer should use now.
func withCA(out *tls.Config, ca *CA, apply func(*tls.Config, *x509.CertPool)) *tls.Config {
	base := out.Clone()
	var (
		mu   sync.Mutex
		pool *x509.CertPool
		cur  *tls.Config
	)
	apply(out, ca.Pool())
	out.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		p := ca.Pool()
		mu.Lock()
		defer mu.Unlock()
		if cur == nil || p != pool {
			c := base.Clone()
			apply(c, p)
			pool, cur = p, c
		}
		return cur, nil
	}
	return out
}

// Current is the configuration a client should dial with now: cfg with
// the CA pool its CA file holds at present (cfg itself when it was not
// built by this package with a CA file).
func Current(cfg *tls.Config) *tls.Config {
	if cfg == nil || cfg.GetConfigForClient == nil {
		return cfg
	}
	c, err := cfg.GetConfigForClient(nil)
	if err != nil || c == nil {
		return cfg
	}
	return c
}
