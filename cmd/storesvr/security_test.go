package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/serve"
)

func TestSecurityFlagsGoTogether(t *testing.T) {
	base := []string{"--node-id", "s1", "--data-dir", "d"}
	none := func(string) string { return "" }
	for _, c := range []struct {
		args []string
		bad  string // "" when accepted
	}{
		{[]string{"--raft-tls-cert", "c", "--raft-tls-key", "k"}, "--raft-tls-ca"},
		{[]string{"--raft-tls-cert", "c", "--raft-tls-key", "k", "--raft-tls-ca", "ca"}, ""},
		{[]string{"--tls-cert", "c"}, "--tls-key"},
		{[]string{"--tls-client-ca", "ca"}, "--tls-client-ca needs --tls-cert"},
		{[]string{"--tls-cert", "c", "--tls-key", "k", "--tls-client-ca", "ca", "--auth-file", "a", "--join-token-file", "j"}, ""},
		// Members ask each other with the join token when one starts
		// without state, rejoins or is promoted.
		{[]string{"--auth-file", "a"}, "--auth-file needs --join-token-file"},
	} {
		var out bytes.Buffer
		_, err := parseConfig(append(append([]string{}, base...), c.args...), none, &out)
		if c.bad == "" && err != nil || c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
			t.Errorf("%q: err %v, want one naming %q", c.args, err, c.bad)
		}
	}
}

// TestMemberClientToken: the join token goes on calls without a token
// (the join) and never replaces a forwarded caller's.
func TestMemberClientToken(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
	}))
	defer srv.Close()
	tokFile := filepath.Join(t.TempDir(), "join.token")
	if err := os.WriteFile(tokFile, []byte("join-token-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config{memberSecurity: memberSecurity{JoinTokenFile: tokFile}}
	hc, err := cfg.memberClient(serve.Env{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	// h2c prior knowledge is what members speak; the test server speaks
	// HTTP/1.1, so call through the token layer with a plain transport.
	hc.Transport = withToken{next: http.DefaultTransport, token: hc.Transport.(withToken).token}
	for _, caller := range []string{"", "Bearer caller-token"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
		if caller != "" {
			req.Header.Set("Authorization", caller)
		}
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	if len(got) != 2 || got[0] != "Bearer join-token-0123456789" || got[1] != "Bearer caller-token" {
		t.Fatalf("Authorization sent: %q", got)
	}

	// A rotated token file is followed with no restart.
	if err := os.WriteFile(tokFile, []byte("join-token-rotated-0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "the rotated join token sent", func() bool {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
		res, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return got[len(got)-1] == "Bearer join-token-rotated-0123"
	})
}
