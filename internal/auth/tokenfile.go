package auth

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// TokenFile is a bearer token read from a file (--store-token-file,
// --join-token-file) and read again when the file changes, so a rotated
// token takes effect within about a second with no restart and no
// signal. A file that changes to something that is not a token keeps the
// previous token in force and is logged once.
type TokenFile struct {
	path   string
	logger *slog.Logger
	now    func() time.Time

	mu            sync.Mutex
	token         string
	stamp, failed fileStamp
	checked       time.Time
}

// OpenTokenFile reads the token file; it fails if it holds no token now.
// A nil logger means slog.Default().
func OpenTokenFile(path string, logger *slog.Logger) (*TokenFile, error) {
	if logger == nil {
		logger = slog.Default()
	}
	f := &TokenFile{path: path, logger: logger, now: time.Now}
	b, st, err := readStamped(path)
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	if f.token, err = parseToken(path, b); err != nil {
		return nil, err
	}
	f.stamp, f.checked = st, f.now()
	return f, nil
}

// Token is the token in force, read again first if the file changed
// (looked at no more than once a second).
func (f *TokenFile) Token() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := f.now()
	if now.Sub(f.checked) < recheck {
		return f.token
	}
	f.checked = now
	b, st, err := readStamped(f.path)
	if err != nil || st == f.stamp || st == f.failed {
		return f.token
	}
	tok, err := parseToken(f.path, b)
	if err != nil {
		f.failed = st
		f.logger.Error("token file changed but holds no token; keeping the previous one", "file", f.path, "err", err)
		return f.token
	}
	f.token, f.stamp, f.failed = tok, st, fileStamp{}
	f.logger.Info("token file reloaded", "file", f.path)
	return f.token
}

// ReadTokenFile reads a token file once: the token, surrounding white
// space (a final newline) removed.
func ReadTokenFile(path string) (string, error) {
	b, _, err := readStamped(path)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	return parseToken(path, b)
}

func parseToken(path string, b []byte) (string, error) {
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", errors.New("token file " + path + " is empty")
	}
	if strings.ContainsAny(tok, " \t\r\n") {
		return "", errors.New("token file " + path + " holds more than one word")
	}
	return tok, nil
}
