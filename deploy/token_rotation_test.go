package deploy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// secretVolume is a directory laid out as the kubelet lays out a Secret
// volume: the files are links into ..data, a link to a timestamped
// directory, and an update writes a new directory and swaps ..data in one
// rename (the kubelet's AtomicWriter). A process that re-reads the path
// sees the old files or the new ones, never a mix.
type secretVolume struct {
	dir string
	gen int
}

func (s *secretVolume) write(t *testing.T, files map[string]string) {
	t.Helper()
	s.gen++
	ts := fmt.Sprintf("..%d", s.gen)
	if err := os.Mkdir(filepath.Join(s.dir, ts), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(s.dir, ts, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(s.dir, name)
		if _, err := os.Lstat(link); os.IsNotExist(err) {
			if err := os.Symlink(filepath.Join("..data", name), link); err != nil {
				t.Fatal(err)
			}
		}
	}
	tmp := filepath.Join(s.dir, "..data_tmp")
	if err := os.Symlink(ts, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, "..data")); err != nil {
		t.Fatal(err)
	}
}

// runTokenRotation runs a StatefulSet pod with --auth-file and
// --join-token-file from a Secret-like volume, then rotates the admin
// token as the kubelet updates a mounted Secret, with no signal and no
// restart: within seconds the new token is accepted and the old one
// refused.
func runTokenRotation(t *testing.T, e *engine, image string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const oldTok, newTok = "admin-token-before-rotation-01", "admin-token-after-rotation-002"
	auth := func(tok string) map[string]string {
		return map[string]string{
			"auth.json":   fmt.Sprintf(`[{"name": "ops", "token": %q, "roles": ["admin"]}]`, tok),
			"admin-token": tok + "\n",
		}
	}
	vol := &secretVolume{dir: t.TempDir()}
	if err := os.Chmod(vol.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	vol.write(t, auth(oldTok))

	p := newSTSPods(t, e, image, fmt.Sprintf("seqsvr-rot-%d", os.Getpid()))
	p.start(0, []string{"--ordinal-initial=1", "--auth-file=/etc/seqsvr/auth/auth.json", "--join-token-file=/etc/seqsvr/auth/admin-token"},
		"-v", vol.dir+":/etc/seqsvr/auth:ro")
	createTag := func(tag, tok string) int {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.url0+"/seqsvr.v1.StoreService/CreateTag", strings.NewReader(fmt.Sprintf(`{"tag":%q}`, tag)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatalf("timed out waiting for %s", what)
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	waitFor("a tag created with the old token", func() bool { return createTag("before", oldTok) == http.StatusOK })
	if code := createTag("early", newTok); code != http.StatusUnauthorized {
		t.Fatalf("the new token before the rotation: %d, want 401", code)
	}

	rotated := time.Now()
	vol.write(t, auth(newTok))
	waitFor("the new token accepted", func() bool { return createTag("after", newTok) == http.StatusOK })
	took := time.Since(rotated)
	if code := createTag("late", oldTok); code != http.StatusUnauthorized {
		t.Fatalf("the old token after the rotation: %d, want 401", code)
	}
	t.Logf("a token rotated in a Secret-like volume (..data swapped) took effect in %v, no signal, no restart", took.Round(100*time.Millisecond))
}
