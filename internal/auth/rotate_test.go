package auth

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/errs"
)

const rotatedTok = "admin-token-9876543210" // adminTok's length

func TestReloadIfChanged(t *testing.T) {
	a, path := newAuth(t)
	if changed, err := a.ReloadIfChanged(); changed || err != nil {
		t.Fatalf("unchanged file: changed %v, %v", changed, err)
	}
	tick := time.Unix(1_700_000_000, 0)
	writeFile(t, path, `[{"name": "ops", "token": "`+adminTok+`", "roles": ["admin"]}]`)
	if err := os.Chtimes(path, tick, tick); err != nil {
		t.Fatal(err)
	}
	if changed, err := a.ReloadIfChanged(); !changed || err != nil {
		t.Fatalf("rewritten file: changed %v, %v", changed, err)
	}
	// The same size within the same mtime tick: only the contents tell.
	writeFile(t, path, `[{"name": "ops", "token": "`+rotatedTok+`", "roles": ["admin"]}]`)
	if err := os.Chtimes(path, tick, tick); err != nil {
		t.Fatal(err)
	}
	if changed, err := a.ReloadIfChanged(); !changed || err != nil {
		t.Fatalf("token swapped for one of the same length: changed %v, %v", changed, err)
	}
	if _, err := a.Check("Bearer "+rotatedTok, "/seqsvr.v1.StoreService/DeleteTag"); err != nil {
		t.Fatalf("new token refused: %v", err)
	}
	if _, err := a.Check("Bearer "+adminTok, "/seqsvr.v1.StoreService/DeleteTag"); !errors.Is(err, errs.Unauthenticated) {
		t.Fatalf("removed token: %v", err)
	}

	writeFile(t, path, `[{ half written`)
	if changed, err := a.ReloadIfChanged(); !changed || err == nil {
		t.Fatalf("broken file: changed %v, %v; want an error", changed, err)
	}
	if changed, err := a.ReloadIfChanged(); changed || err != nil {
		t.Fatalf("the same broken file again: changed %v, %v; want it left alone", changed, err)
	}
	if _, err := a.Check("Bearer "+rotatedTok, "/seqsvr.v1.StoreService/DeleteTag"); err != nil {
		t.Fatalf("a broken file replaced the tokens: %v", err)
	}

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if changed, err := a.ReloadIfChanged(); changed || err != nil {
		t.Fatalf("file gone for a moment: changed %v, %v", changed, err)
	}
	writeFile(t, path, `[{"name": "app", "token": "`+clientTok+`", "roles": ["client"]}]`)
	if changed, err := a.ReloadIfChanged(); !changed || err != nil {
		t.Fatalf("fixed file: changed %v, %v", changed, err)
	}
	if _, err := a.Check("Bearer "+clientTok, "/seqsvr.v1.AllocService/NextIDs"); err != nil {
		t.Fatal(err)
	}
}

// TestTokenFileFollowsRotation: a rewritten token file is read again once
// the recheck interval has passed (the clock is the test's), a file that
// holds no token keeps the previous one, and a Kubernetes-style symlink
// swap is followed.
func TestTokenFileFollowsRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	writeFile(t, path, "first-token-0123456789\n")
	f, err := OpenTokenFile(path, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	f.now = func() time.Time { return now }
	f.checked = now
	if got := f.Token(); got != "first-token-0123456789" {
		t.Fatalf("Token = %q", got)
	}
	writeFile(t, path, "second-token-012345678\n")
	if got := f.Token(); got != "first-token-0123456789" {
		t.Fatalf("Token within the recheck interval = %q, want the first still", got)
	}
	now = now.Add(recheck)
	if got := f.Token(); got != "second-token-012345678" {
		t.Fatalf("Token after a rewrite = %q", got)
	}
	writeFile(t, path, "")
	now = now.Add(recheck)
	if got := f.Token(); got != "second-token-012345678" {
		t.Fatalf("Token after the file was emptied = %q, want the previous one", got)
	}
	// The kubelet's update: a new directory, the link swapped to it.
	if err := os.Mkdir(filepath.Join(dir, "v2"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "v2", "token"), "third-token-0123456789")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "v2", "token"), path); err != nil {
		t.Fatal(err)
	}
	now = now.Add(recheck)
	if got := f.Token(); got != "third-token-0123456789" {
		t.Fatalf("Token after the symlink swap = %q", got)
	}
}

func TestOpenTokenFileRefusesNoToken(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"empty": " \n", "two words": "a b"} {
		path := filepath.Join(dir, name)
		writeFile(t, path, body)
		if _, err := OpenTokenFile(path, nil); err == nil {
			t.Errorf("%s: opened", name)
		}
	}
	if _, err := OpenTokenFile(filepath.Join(dir, "missing"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
