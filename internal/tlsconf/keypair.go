package tlsconf

import (
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// recheck is how often a handshake may look at the files again.
const recheck = time.Second

// KeyPair is a certificate and key read from files and re-read when they
// change.
type KeyPair struct {
	certFile, keyFile string
	logger            *slog.Logger
	now               func() time.Time

	mu      sync.Mutex
	cert    *tls.Certificate
	stamp   [2]fileStamp
	checked time.Time
	// failed is the files as they were when they last did not load (a
	// half-written pair is retried once either file changes again): the
	// same bad pair is neither parsed nor logged again every second.
	failed [2]fileStamp
}

// fileStamp tells whether a file changed. The contents' digest is in it
// because a rewrite within one timestamp tick to a file of the same size
// (a CA file with one certificate for another) leaves the rest equal; the
// files are small and read at most once a second.
type fileStamp struct {
	mod  time.Time
	size int64
	sum  [sha256.Size]byte
}

func statFile(path string) (fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{fi.ModTime(), fi.Size(), sha256.Sum256(b)}, nil
}

// LoadKeyPair reads the pair; it fails if it does not load now. A nil
// logger means slog.Default().
func LoadKeyPair(certFile, keyFile string, logger *slog.Logger) (*KeyPair, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("a certificate needs both its file and its key file (got %q and %q)", certFile, keyFile)
	}
	if logger == nil {
		logger = slog.Default()
	}
	k := &KeyPair{certFile: certFile, keyFile: keyFile, logger: logger, now: time.Now}
	stamp, err := k.stat()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("certificate %s, key %s: %w", certFile, keyFile, err)
	}
	k.cert, k.stamp, k.checked = &cert, stamp, k.now()
	return k, nil
}

func (k *KeyPair) stat() ([2]fileStamp, error) {
	var s [2]fileStamp
	for i, f := range []string{k.certFile, k.keyFile} {
		st, err := statFile(f)
		if err != nil {
			return s, err
		}
		s[i] = st
	}
	return s, nil
}

// Current is the pair in force, re-read first if the files changed.
func (k *KeyPair) Current() *tls.Certificate {
	k.mu.Lock()
	defer k.mu.Unlock()
	now := k.now()
	if now.Sub(k.checked) < recheck {
		return k.cert
	}
	k.checked = now
	stamp, err := k.stat()
	if err != nil || stamp == k.stamp || stamp == k.failed {
		return k.cert
	}
	cert, err := tls.LoadX509KeyPair(k.certFile, k.keyFile)
	if err != nil {
		k.failed = stamp
		k.logger.Error("certificate changed but does not load; keeping the old one", "cert", k.certFile, "key", k.keyFile, "err", err)
		return k.cert
	}
	k.cert, k.stamp, k.failed = &cert, stamp, [2]fileStamp{}
	k.logger.Info("certificate reloaded", "cert", k.certFile)
	return k.cert
}

// GetCertificate is for tls.Config.GetCertificate.
func (k *KeyPair) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return k.Current(), nil
}

// GetClientCertificate is for tls.Config.GetClientCertificate.
func (k *KeyPair) GetClientCertificate(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	return k.Current(), nil
}
