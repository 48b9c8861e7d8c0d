package seq

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/internal/dirlock"
	"github.com/seqsvr/seqsvr/internal/durable"
)

func TestLoadInstance(t *testing.T) {
	if !dirlock.Supported {
		t.Skip("no file locks: every start gets a new ID")
	}
	dir := t.TempDir()
	a, release, err := LoadInstance(dir, "a1")
	if err != nil || a == "" {
		t.Fatalf("first: %q %v", a, err)
	}
	if _, _, err := LoadInstance(dir, "a1"); err == nil {
		t.Fatal("a second process got the instance of a live one")
	}
	release()
	again, release, err := LoadInstance(dir, "a1")
	if err != nil || again != a {
		t.Fatalf("restart on the same dir: %q %v, want %q", again, err, a)
	}
	release()
	other, release, err := LoadInstance(dir, "a2")
	if err != nil || other == a || other == "" {
		t.Fatalf("another node ID on the dir: %q %v (had %q)", other, err, a)
	}
	release()
	twin, release, err := LoadInstance(t.TempDir(), "a2")
	if err != nil || twin == other {
		t.Fatalf("a twin with its own dir: %q %v, must differ from %q", twin, err, other)
	}
	release()
}

// A data dir from before the durable header keeps its instance; a file
// from a newer release is refused, naming it.
func TestLoadInstanceFormats(t *testing.T) {
	if !dirlock.Supported {
		t.Skip("no file locks: every start gets a new ID")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, instanceFile)
	if err := os.WriteFile(path, []byte(`{"node_id":"a1","instance_id":"OLDINSTANCE"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	id, release, err := LoadInstance(dir, "a1")
	if err != nil || id != "OLDINSTANCE" {
		t.Fatalf("legacy file: %q %v", id, err)
	}
	release()
	if err := durable.Write(path, instanceVersion+1, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadInstance(dir, "a1"); !errors.Is(err, durable.ErrNewerFormat) || !strings.Contains(err.Error(), path) {
		t.Fatalf("newer file: %v, want ErrNewerFormat naming %s", err, path)
	}
	// A new instance is written with the header.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	id, release, err = LoadInstance(dir, "a2")
	if err != nil {
		t.Fatal(err)
	}
	release()
	if v, b, err := durable.Read(path, instanceVersion); err != nil || v != instanceVersion || !strings.Contains(string(b), id) {
		t.Fatalf("written: version %d %q %v", v, b, err)
	}
}
