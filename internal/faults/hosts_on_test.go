//go:build faults

package faults

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The harness's names resolve to the file's addresses through the Go
// resolver, as a listener's and a dialer's would: IPv4 and IPv6 by
// family, case and a trailing dot ignored, an unknown name "no such
// host".
func TestHostsResolver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	body := "# members\n127.0.0.2 store-0.ordinal.test\n127.0.0.3 store-1.ordinal.test other.test\n::1 store-1.ordinal.test\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := HostsResolver(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for name, want := range map[string][]string{
		"store-0.ordinal.test":  {"127.0.0.2"},
		"STORE-0.Ordinal.Test.": {"127.0.0.2"},
		"store-1.ordinal.test":  {"127.0.0.3", "::1"},
		"other.test":            {"127.0.0.3"},
	} {
		got, err := r.LookupHost(ctx, name)
		if err != nil {
			t.Fatalf("LookupHost(%q): %v", name, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("LookupHost(%q) = %v, want %v", name, got, want)
		}
	}
	_, err = r.LookupHost(ctx, "store-9.ordinal.test")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("unknown name: %v, want not found", err)
	}
	// What the servers do with it: listen on the name.
	old := net.DefaultResolver
	net.DefaultResolver = r
	defer func() { net.DefaultResolver = old }()
	l, err := net.Listen("tcp4", "store-0.ordinal.test:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if ip := l.Addr().(*net.TCPAddr).IP.String(); ip != "127.0.0.2" {
		t.Errorf("listening on %s, want 127.0.0.2", ip)
	}
}

func TestHostsResolverBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte("not-an-ip name\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := HostsResolver(path); err == nil {
		t.Fatal("a line without an address was accepted")
	}
	if _, err := HostsResolver(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing file was accepted")
	}
}
