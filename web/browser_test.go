package web_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/web"
)

var shots = flag.String("screenshots", "", "directory for the status pages' screenshots (make web-screenshots writes docs/img)")

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(launchtest.Main(m))
}

// chromiumPath is the system Chromium (SEQSVR_CHROMIUM overrides).
func chromiumPath() string {
	if p := os.Getenv("SEQSVR_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// needBrowser fails, not skips, when the browser test cannot run: make
// test installs playwright-core (make web-deps) and .ci/run installs
// Chromium, so a missing piece is a broken setup, said plainly.
func needBrowser(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node not found: the browser test needs Node.js (apt-get install nodejs)")
	}
	if _, err := os.Stat("node_modules/playwright-core/package.json"); err != nil {
		t.Fatal("web/node_modules/playwright-core missing: run make web-deps")
	}
	if _, err := os.Stat(chromiumPath()); err != nil {
		t.Fatalf("%s missing: apt-get install -y chromium (or set SEQSVR_CHROMIUM): %v", chromiumPath(), err)
	}
}

// browserCluster is the cluster the browser sees: 3 storesvrs and 2
// allocsvrs, tokens required everywhere (the secure mode), Raft over
// mutual TLS. The stores and a1 serve HTTPS (h2 by ALPN); a2 serves plain
// HTTP so its HTTP/1.1 front (the fast paths) is in the path, which TLS
// turns off. The stores ask for no client certificate: a browser has none.
type browserCluster struct {
	c   *launch.Cluster
	sec *launch.Security
}

func startBrowserCluster(t *testing.T) *browserCluster {
	t.Helper()
	dir := t.TempDir()
	sec, err := launch.NewSecurity(filepath.Join(dir, "sec"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := launch.New(launch.Options{
		BinDir: binDir(t), Dir: dir, Stores: 3, Allocs: 2, Security: sec, Logf: t.Logf,
		AllocArgs: []string{"--seq"},
		// The LAN defaults (200 ms) call elections whenever Chromium and
		// the tests beside this one take the 2 cores for a moment; this
		// test is about what the pages show, not about elections.
		StoreArgs: []string{"--heartbeat-timeout", "1s", "--election-timeout", "1s", "--leader-lease-timeout", "500ms"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range c.Stores {
		s.ExtraArgs = without(s.ExtraArgs, "--tls-client-ca")
	}
	a2 := c.Allocs[1]
	a2.ExtraArgs = without(without(a2.ExtraArgs, "--tls-cert"), "--tls-key")
	a2.TLS = false
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	t.Cleanup(func() {
		c.Close()
		if t.Failed() {
			for _, p := range c.All() {
				if b, err := os.ReadFile(p.LogPath); err == nil {
					t.Logf("---- %s log (tail) ----\n%s", p.Name, tailString(string(b), 2000))
				}
			}
		}
	})
	if err := c.Launch(ctx); err != nil {
		t.Fatal(err)
	}
	return &browserCluster{c: c, sec: sec}
}

// without drops flag and its value from args.
func without(args []string, flag string) []string {
	i := slices.Index(args, flag)
	if i < 0 {
		panic("no " + flag + " in " + strings.Join(args, " "))
	}
	return slices.Delete(slices.Clone(args), i, i+2)
}

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// spki is the base64 SHA-256 of the certificate's public key, which
// Chromium's --ignore-certificate-errors-spki-list trusts (and nothing
// else): the cluster's own CA is not in the browser's store.
func spki(t *testing.T, certFile string) string {
	b, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	cert, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// runBrowser runs test/browser.mjs for phase and decodes its RESULT line.
func runBrowser(t *testing.T, cfg map[string]any, out any) {
	t.Helper()
	b, _ := json.Marshal(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "test/browser.mjs")
	cmd.Env = append(os.Environ(), "SEQSVR_WEB_TEST="+string(b))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	t.Logf("browser phase %v: %v", cfg["phase"], time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("browser.mjs %v: %v\nstderr:\n%s\nstdout:\n%s", cfg["phase"], err, stderr.String(), tailString(stdout.String(), 4000))
	}
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if res, ok := strings.CutPrefix(sc.Text(), "RESULT "); ok {
			if err := json.Unmarshal([]byte(res), out); err != nil {
				t.Fatalf("RESULT: %v\n%s", err, res)
			}
			return
		}
	}
	t.Fatalf("browser.mjs printed no RESULT line:\n%s\n%s", stdout.String(), stderr.String())
}

// crossOriginServer serves a page on an origin of its own that loads the
// client bundle (web/dist/ui/client.js, window.seqsvr).
func crossOriginServer(t *testing.T) string {
	client, err := fs.ReadFile(web.Assets(), "ui/client.js")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `<!doctype html><html><head><meta charset="utf-8"><title>another origin</title><script src="/client.js"></script></head><body>another origin</body></html>`)
	})
	mux.HandleFunc("GET /client.js", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/javascript")
		_, _ = w.Write(client)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func check(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func itoa[T ~int64 | ~uint64 | ~int32](v T) string { return strconv.FormatInt(int64(v), 10) }
