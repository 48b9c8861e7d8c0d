package launchtest

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
)

// Limited is a cluster of one storesvr (and allocs allocsvrs) with
// --auth-file and small limits, for Attack: plain HTTP, or with secure
// HTTPS, client certificates and Raft mutual TLS (launch.Security).
type Limited struct {
	C   *launch.Cluster
	Sec *launch.Security
	// TLS is what a client needs to reach the processes (nil on plain
	// HTTP): it trusts the CA and presents the certificate.
	TLS *tls.Config
}

// The limits Limited runs with: short enough that a held connection ends
// in seconds, Attack's AttackConns within one address's bound.
const (
	LimitedBodyTimeout  = 2 * time.Second
	LimitedH2MaxStreams = 4
	LimitedPerAddr      = AttackConns + 50
)

// LimitFlags are the limit flags Limited gives every process.
func LimitFlags() []string {
	return []string{"--body-timeout", LimitedBodyTimeout.String(), "--http2-max-streams", strconv.Itoa(LimitedH2MaxStreams),
		"--max-conns-per-addr", strconv.Itoa(LimitedPerAddr), "--max-body-bytes-in-flight", strconv.Itoa(4 << 20)}
}

// StartLimited starts the cluster and waits until it is ready.
func StartLimited(t *testing.T, secure bool, allocs int) *Limited {
	t.Helper()
	SkipShort(t)
	dir := t.TempDir()
	sec, err := launch.NewSecurity(dir + "/sec")
	if err != nil {
		t.Fatal(err)
	}
	AddScraper(t, sec.AuthFile)
	opts := launch.Options{BinDir: BinDir(t), Dir: dir, Stores: 1, Allocs: allocs, Logf: t.Logf,
		StoreArgs: LimitFlags(), AllocArgs: LimitFlags()}
	l := &Limited{Sec: sec}
	if secure {
		opts.Security = sec
		keys, err := tlsconf.LoadKeyPair(sec.CertFile, sec.KeyFile, nil)
		if err != nil {
			t.Fatal(err)
		}
		if l.TLS, err = tlsconf.Client(sec.CAFile, keys); err != nil {
			t.Fatal(err)
		}
	} else {
		opts.StoreArgs = append(opts.StoreArgs, "--auth-file", sec.AuthFile, "--join-token-file", sec.AdminTokenFile)
		opts.AllocArgs = append(opts.AllocArgs, "--auth-file", sec.AuthFile, "--store-token-file", sec.AllocTokenFile)
	}
	c, err := launch.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	if !secure {
		// The cluster's own calls (leader, readiness) need a token too.
		c.HTTPClient().Transport = auth.BearerTransport(sec.AdminToken, http.DefaultTransport)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Launch(ctx); err != nil {
		t.Fatal(err)
	}
	l.C = c
	return l
}

// ScraperToken is Limited's token with role metrics, the one a
// Prometheus scraper is given (docs/security.md).
const ScraperToken = "prometheus-scraper-token-0123456789"

// AddScraper lists ScraperToken, with role metrics, in the auth file at
// path.
func AddScraper(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var entries []map[string]any
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatal(err)
	}
	entries = append(entries, map[string]any{"name": "prometheus", "token": ScraperToken, "roles": []string{"metrics"}})
	if b, err = json.Marshal(entries); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
