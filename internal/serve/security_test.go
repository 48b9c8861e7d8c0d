package serve

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
	"github.com/seqsvr/seqsvr/internal/tlsconf/tlstest"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// runSecure runs a process with sec and the protoEcho routes; it returns
// the bound address and the log.
func runSecure(t *testing.T, sec Security) (string, *syncBuffer) {
	t.Helper()
	var log syncBuffer
	addr := make(chan string, 1)
	p := testProcess(true, func(_ context.Context, env Env) (*App, error) {
		addr <- env.Addr
		return &App{Handler: Options{Routes: protoEcho()}}, nil
	})
	p.Common.Security = sec
	p.Logger = slog.New(slog.NewTextHandler(&log, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := runBackground(ctx, p)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	select {
	case a := <-addr:
		return a, &log
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	return "", nil
}

func TestNoAuthFileWarns(t *testing.T) {
	_, log := runSecure(t, Security{})
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "no --auth-file") {
		t.Fatalf("log without the warning:\n%s", log)
	}
}

// TestTLSAndAuth: HTTPS with h2 and HTTP/1.1 by ALPN, routes guarded by
// the auth file, health open.
func TestTLSAndAuth(t *testing.T) {
	ca := tlstest.NewCA(t)
	cert, key := ca.Issue(t, "srv", "127.0.0.1")
	authPath := filepath.Join(t.TempDir(), "auth.json")
	if err := os.WriteFile(authPath, []byte(`[{"name":"a","token":"a-token-0123456789abc","roles":["client"]}]`), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, log := runSecure(t, Security{AuthFile: authPath, TLSCert: cert, TLSKey: key})
	if strings.Contains(log.String(), "no --auth-file") {
		t.Errorf("warned with an auth file:\n%s", log)
	}
	cfg, err := tlsconf.Client(ca.CertFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	h2 := http.DefaultTransport.(*http.Transport).Clone()
	h2.TLSClientConfig, h2.ForceAttemptHTTP2 = cfg, true
	h1 := http.DefaultTransport.(*http.Transport).Clone()
	h1.TLSClientConfig, h1.ForceAttemptHTTP2 = cfg.Clone(), false
	h1.TLSClientConfig.NextProtos = []string{"http/1.1"}
	base := "https://" + addr
	for proto, tr := range map[string]*http.Transport{"HTTP/2.0": h2, "HTTP/1.1": h1} {
		c := &http.Client{Transport: tr, Timeout: 5 * time.Second}
		poll.Until(t, 5*time.Second, proto+" /readyz", func() bool {
			code, _, _ := get(t, c, base+"/readyz")
			return code == http.StatusOK
		})
		for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
			if code, _, _ := get(t, c, base+p); code != http.StatusOK {
				t.Errorf("%s %s: %d", proto, p, code)
			}
		}
		if code, _, _ := get(t, c, base+"/proto"); code != http.StatusUnauthorized {
			t.Errorf("%s /proto without a token: %d", proto, code)
		}
		req, _ := http.NewRequest(http.MethodGet, base+"/proto", nil)
		req.Header.Set("Authorization", "Bearer a-token-0123456789abc")
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b := new(bytes.Buffer)
		_, _ = b.ReadFrom(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || b.String() != proto {
			t.Errorf("%s /proto with a token: %d %q", proto, res.StatusCode, b)
		}
	}
	if _, _, res := get(t, http.DefaultClient, "http://"+addr+"/healthz"); res.StatusCode == http.StatusOK {
		t.Error("plain HTTP answered 200 on the HTTPS port")
	}
}
