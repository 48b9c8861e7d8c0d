package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/storage/backup"
	"github.com/seqsvr/seqsvr/storage/backup/backuptest"
)

// backup inspect shows what each evil file holds (as a table and as
// JSON, whatever its time), then exits 1 naming its problem; a valid
// backup exits 0.
func TestInspectEvilFiles(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	valid, err := backup.Encode(backuptest.Valid(now))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "valid.bk")
	if err := os.WriteFile(path, valid, 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := invoke(nil, "backup", "inspect", path); code != 0 || !strings.Contains(out, "lost-cluster") {
		t.Fatalf("inspect of a valid backup: exit %d, %q %q", code, out, errOut)
	}
	for _, e := range backuptest.Evils(now) {
		path := filepath.Join(dir, strings.NewReplacer(" ", "-", "/", "-", "<", "", ">", "").Replace(e.Name)+".bk")
		if err := os.WriteFile(path, e.File, 0o600); err != nil {
			t.Fatal(err)
		}
		code, out, errOut := invoke(nil, "backup", "inspect", path)
		if code != 1 || !strings.Contains(out, "CLUSTER_ID") || !strings.Contains(errOut, e.Want) || !strings.Contains(errOut, "invalid state") {
			t.Errorf("inspect of %s: exit %d, stdout %q, stderr %q; want the summary, exit 1 naming %q", e.Name, code, out, errOut, e.Want)
		}
		code, out, _ = invoke(nil, "backup", "inspect", path, "-o", "json")
		var s map[string]any
		if err := json.Unmarshal([]byte(out), &s); code != 1 || err != nil || s["time"] == nil {
			t.Errorf("inspect -o json of %s: exit %d, %v: %q", e.Name, code, err, out)
		}
	}
}
