package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/internal/errs"
)

func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	for _, data := range []string{`{"a":1}`, "", "two\nlines\n"} {
		if err := Write(path, 3, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		v, got, err := Read(path, 3)
		if err != nil || v != 3 || string(got) != data {
			t.Fatalf("Read = %d %q %v, want 3 %q", v, got, err, data)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("dir holds %d entries, want the file alone", len(entries))
	}
	if _, _, err := Read(filepath.Join(t.TempDir(), "none"), 1); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	if err := Write(path, 0, nil, 0o644); err == nil {
		t.Fatal("version 0 written")
	}
}

func TestNewerVersionRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.json")
	if err := Write(path, 5, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := Read(path, 4)
	if !errors.Is(err, ErrNewerFormat) || !errors.Is(err, errs.FailedPrecondition) {
		t.Fatalf("err = %v, want ErrNewerFormat", err)
	}
	for _, s := range []string{path, "version 5", "up to 4"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
	if _, _, err := Read(path, 5); err != nil {
		t.Fatalf("same version: %v", err)
	}
}

// A file from before the header (what older releases left in data dirs)
// reads whole as version 0; a damaged header is an error, not content.
func TestOldFormat(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "old.json")
	const body = `{"format":1,"node_id":"a"}` + "\n"
	if err := os.WriteFile(old, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	v, got, err := Read(old, 1)
	if err != nil || v != Unversioned || string(got) != body {
		t.Fatalf("Read = %d %q %v, want the whole file as version 0", v, got, err)
	}
	for _, bad := range []string{header + "x\n{}", header + "-1\n{}", header + "7"} {
		p := filepath.Join(dir, "bad")
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := Read(p, 9); err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("Read(%q) = %v, want an error naming the file", bad, err)
		}
	}
}

// TestCrashSafeOrder stops Write where a crash could: the temp file is
// complete and synced before it is renamed, and until the rename the file
// holds its old content; a stale temp file is never read.
func TestCrashSafeOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := Write(path, 1, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	crash := errors.New("crash")
	var steps []step
	testHook = func(s step) error {
		steps = append(steps, s)
		if s != stepSynced {
			return nil
		}
		// Before the rename: the new content is whole in a temp file
		// of the same directory, the file itself still old.
		tmps, _ := filepath.Glob(filepath.Join(dir, ".state.json.tmp*"))
		if len(tmps) != 1 {
			t.Fatalf("temp files %v, want one in the file's directory", tmps)
		}
		if b, _ := os.ReadFile(tmps[0]); string(b) != header+"2\nnew" {
			t.Fatalf("temp holds %q before the rename", b)
		}
		if _, b, _ := Read(path, 2); string(b) != "old" {
			t.Fatalf("file holds %q before the rename", b)
		}
		return crash
	}
	t.Cleanup(func() { testHook = nil })
	if err := Write(path, 2, []byte("new"), 0o644); !errors.Is(err, crash) {
		t.Fatalf("err = %v", err)
	}
	if _, b, _ := Read(path, 2); string(b) != "old" {
		t.Fatalf("after a crash before the rename the file holds %q, want old", b)
	}
	// A crash's leftover temp file does not disturb reads or writes.
	if err := os.WriteFile(filepath.Join(dir, ".state.json.tmp123"), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	steps, testHook = nil, func(s step) error { steps = append(steps, s); return nil }
	if err := Write(path, 2, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 2 || steps[0] != stepSynced || steps[1] != stepRenamed {
		t.Fatalf("steps %v, want synced then renamed", steps)
	}
	if v, b, err := Read(path, 2); v != 2 || string(b) != "new" || err != nil {
		t.Fatalf("Read = %d %q %v", v, b, err)
	}
}

// WriteFile stores the bytes as given (a backup carries its own format
// version) with Write's crash order: a crash before the rename leaves
// the old file and no temp file behind.
func TestWriteFileAsIs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.bak")
	if err := WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "old" {
		t.Fatalf("file holds %q, %v; want the bytes as given", b, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	crash := errors.New("crash")
	var steps []step
	testHook = func(s step) error { steps = append(steps, s); return crash }
	t.Cleanup(func() { testHook = nil })
	if err := WriteFile(path, []byte("new"), 0o600); !errors.Is(err, crash) {
		t.Fatalf("err = %v", err)
	}
	if len(steps) != 1 || steps[0] != stepSynced {
		t.Fatalf("steps %v, want a stop once synced, before the rename", steps)
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Fatalf("after a crash before the rename the file holds %q, want old", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("dir holds %d entries, want the file alone", len(entries))
	}
}
