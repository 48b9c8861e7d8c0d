package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/storage/backup/backuptest"
)

// storesvr --restore of each evil backup (a valid frame and checksum,
// contents that break the store's rules) exits 1 naming the problem,
// without a panic, and leaves its empty data dir empty.
func TestRestoreRefusesEvilFiles(t *testing.T) {
	launchtest.SkipShort(t)
	bin := filepath.Join(launchtest.BinDir(t), "storesvr")
	for _, e := range backuptest.Evils(time.Now()) {
		t.Run(e.Name, func(t *testing.T) {
			dir := t.TempDir()
			file, data := filepath.Join(dir, "evil.bk"), filepath.Join(dir, "data")
			if err := os.WriteFile(file, e.File, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(data, 0o750); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, "--node-id", "s1", "--data-dir", data, "--http-addr", "127.0.0.1:0",
				"--raft-addr", "127.0.0.1:0", "--restore", file).CombinedOutput()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("storesvr --restore: %v, want exit status 1\n%s", err, out)
			}
			// The log line quotes the error: its quotes come escaped.
			named := strings.Contains(string(out), e.Want) || strings.Contains(string(out), strings.ReplaceAll(e.Want, `"`, `\"`))
			if !named || strings.Contains(string(out), "panic") {
				t.Fatalf("output does not name %q (or shows a panic):\n%s", e.Want, out)
			}
			left, err := os.ReadDir(data)
			if err != nil || len(left) != 0 {
				t.Fatalf("data dir after the refusal: %v %v, want it empty", left, err)
			}
		})
	}
}
