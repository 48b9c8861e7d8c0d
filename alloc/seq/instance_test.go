package seq

import (
	"testing"

	"github.com/seqsvr/seqsvr/internal/dirlock"
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
