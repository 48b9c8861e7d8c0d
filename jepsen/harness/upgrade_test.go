package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The upgrade verdict passes only when every step ran and each rollback
// served or refused; a crash, a missing step or rollback, or a cluster
// version that did not rise fails it.
func TestUpgradeVerdict(t *testing.T) {
	done := Upgrade{Base: "abc", Stores: 3, Allocs: 2, StoresDone: 3, AllocsDone: 2, LeaderKills: 1, ClusterVersion: "2 after 2s",
		Rollbacks: []Rollback{{Member: "s1", Result: "served"}, {Member: "a1", Result: "served"}}}
	for _, tc := range []struct {
		name   string
		edit   func(*Upgrade)
		ok     bool
		detail string
	}{
		{"all steps, served", func(*Upgrade) {}, true, "s1 served, a1 served"},
		{"refused with its error", func(u *Upgrade) {
			u.Rollbacks[1] = Rollback{Member: "a1", Result: "refused", Log: []string{"data dir format 2 is newer than 1"}}
		}, true, "format 2"},
		{"crashed", func(u *Upgrade) {
			u.Rollbacks[0] = Rollback{Member: "s1", Result: "crashed", Log: []string{"panic: storage: unknown raft command <nil>"}}
		}, false, "unknown raft command"},
		{"not ready", func(u *Upgrade) { u.Rollbacks[1].Result = "not ready" }, false, "a1: not ready"},
		{"one rollback", func(u *Upgrade) { u.Rollbacks = u.Rollbacks[:1] }, false, "1 of 2 rollbacks"},
		{"a store left on the base", func(u *Upgrade) { u.StoresDone = 2 }, false, "2 of 3 storesvrs"},
		{"an allocsvr left on the base", func(u *Upgrade) { u.AllocsDone = 1 }, false, "1 of 2 allocsvrs"},
		{"no leader kill", func(u *Upgrade) { u.LeaderKills = 0 }, false, "never killed"},
		{"cluster version stuck", func(u *Upgrade) { u.ClusterVersion, u.ClusterVersionStuck = "still 1", true }, false, "still 1"},
		{"an error", func(u *Upgrade) { u.Err = "cluster: no leader" }, false, "no leader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := done
			u.Rollbacks = append([]Rollback{}, done.Rollbacks...)
			tc.edit(&u)
			r := u.Verdict()
			if r.OK != tc.ok || !strings.Contains(r.Detail, tc.detail) {
				t.Fatalf("verdict %v %q, want ok=%v with %q", r.OK, r.Detail, tc.ok, tc.detail)
			}
		})
	}
}

// BaseRelease reads commit= and version= from BaseFile and resolves the
// commit; without the file it falls back to the default commit.
func TestBaseRelease(t *testing.T) {
	root := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "base")
	head := git("rev-parse", "HEAD")
	ctx := context.Background()

	if _, err := BaseRelease(ctx, root); err == nil || !strings.Contains(err.Error(), defaultBaseCommit) {
		t.Fatalf("without %s: err %v, want the default commit %s (absent from this repo) named", BaseFile, err, defaultBaseCommit)
	}
	if err := os.MkdirAll(filepath.Join(root, "jepsen"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := "# the base release\ncommit=" + head[:7] + "\n\nversion=0.1.0\n"
	if err := os.WriteFile(filepath.Join(root, BaseFile), []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := BaseRelease(ctx, root)
	if err != nil || b.Commit != head || b.Version != "0.1.0" {
		t.Fatalf("BaseRelease = %+v, %v; want commit %s version 0.1.0", b, err, head)
	}
	if err := os.WriteFile(filepath.Join(root, BaseFile), []byte("commit "+head+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := BaseRelease(ctx, root); err == nil {
		t.Fatal("a line without = was accepted")
	}
}
