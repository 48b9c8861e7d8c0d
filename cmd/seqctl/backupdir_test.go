package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

func TestBackupTarget(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 11, 26, 5, 15, 0, 123e6, time.UTC)
	if f, d, err := backupTarget(dir, 3, now); err != nil || d != dir || f != filepath.Join(dir, "seqsvr-20261126T051500.123Z.bak") {
		t.Errorf("existing dir: %q %q %v", f, d, err)
	}
	if f, d, err := backupTarget(filepath.Join(dir, "x.bak"), 0, now); err != nil || d != "" || f != filepath.Join(dir, "x.bak") {
		t.Errorf("a file: %q %q %v", f, d, err)
	}
	if _, _, err := backupTarget(filepath.Join(dir, "x.bak"), 2, now); err == nil {
		t.Error("--keep with a file: no error")
	}
	if _, _, err := backupTarget(filepath.Join(dir, "missing")+"/", 0, now); err == nil {
		t.Error("a directory that does not exist: no error")
	}
	if _, _, err := backupTarget(dir, -1, now); err == nil {
		t.Error("--keep -1: no error")
	}
}

// TestPruneBackups keeps the newest by name and touches no other file.
func TestPruneBackups(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var names []string
	for i := range 5 {
		names = append(names, backupName(base.Add(time.Duration(i)*time.Hour)))
	}
	others := []string{"notes.txt", "seqsvr-old.bak", "seqsvr-20260101T000000.000Z.bak.tmp-1"}
	for _, n := range append(slices.Clone(names), others...) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := pruneBackups(dir, 2)
	if err != nil || len(removed) != 3 {
		t.Fatalf("removed %v, %v; want the 3 oldest", removed, err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, "*"))
	var got []string
	for _, l := range left {
		got = append(got, filepath.Base(l))
	}
	want := append(slices.Clone(names[3:]), others...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
}

// TestBackupIntoDirectory runs `seqctl backup DIR/ --keep 2` three times
// against a real storesvr: three backups written, the two newest left,
// each readable by backup inspect.
func TestBackupIntoDirectory(t *testing.T) {
	c := launchtest.Start(t, launch.Options{Stores: 1})
	env := map[string]string{"SEQCTL_STORE": c.StoreURLs()[0]}
	dir := t.TempDir()
	for range 3 {
		if code, out, errOut := invoke(env, "backup", dir+"/", "--keep", "2"); code != 0 {
			t.Fatalf("backup: exit %d %q %q", code, out, errOut)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "seqsvr-*.bak"))
	if len(files) != 2 {
		t.Fatalf("%d backups left: %v, want 2", len(files), files)
	}
	for _, f := range files {
		if code, _, errOut := invoke(env, "backup", "inspect", f); code != 0 {
			t.Errorf("inspect %s: exit %d %q", f, code, errOut)
		}
	}
	if code, _, _ := invoke(env, "backup", filepath.Join(dir, "one.bak"), "--keep", "2"); code != 2 {
		t.Errorf("--keep with a file: exit %d, want 2 (usage)", code)
	}
}
