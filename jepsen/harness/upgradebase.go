package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// BaseFile names the base release the upgrade scenario starts from,
// relative to the module root: `key=value` lines (commit=, version=), #
// comments. Until it exists the scenario starts from defaultBaseCommit.
const BaseFile = "jepsen/upgrade-base"

// defaultBaseCommit is main's commit when the upgrade work started, the
// base release until BaseFile names one.
const defaultBaseCommit = "955cac4"

// Base is the release the upgrade scenario starts from.
type Base struct {
	Commit  string // full hash once resolved
	Version string // stamped into its binaries; empty: their build info
}

// BaseRelease reads BaseFile under root, or falls back to
// defaultBaseCommit, and resolves the commit to its full hash.
func BaseRelease(ctx context.Context, root string) (Base, error) {
	b := Base{Commit: defaultBaseCommit}
	f, err := os.Open(filepath.Join(root, BaseFile))
	switch {
	case err == nil:
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return b, fmt.Errorf("%s: line %q is not key=value", BaseFile, line)
			}
			switch strings.TrimSpace(k) {
			case "commit":
				b.Commit = strings.TrimSpace(v)
			case "version":
				b.Version = strings.TrimSpace(v)
			}
		}
		if err := sc.Err(); err != nil {
			return b, err
		}
	case !errors.Is(err, fs.ErrNotExist):
		return b, err
	}
	out, err := exec.CommandContext(ctx, "git", "-C", root, "rev-parse", "--verify", b.Commit+"^{commit}").Output()
	if err != nil {
		return b, fmt.Errorf("upgrade base: git rev-parse %s: %w", b.Commit, err)
	}
	b.Commit = strings.TrimSpace(string(out))
	return b, nil
}

// BuildBase builds the base release's storesvr and allocsvr (with
// `-tags hashicorpmetrics`, never faults or coverage: it is the release as
// shipped) from a `git worktree` of its commit, so no network is needed,
// into cacheDir/base-<commit>/, and returns that directory. A directory
// already built is reused: the binaries of one commit never change.
func BuildBase(ctx context.Context, root, cacheDir string, b Base) (string, error) {
	dir := filepath.Join(cacheDir, "base-"+b.Commit)
	if baseBuilt(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cacheDir, ".base-build-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	if out, err := exec.CommandContext(ctx, "git", "-C", root, "worktree", "add", "--detach", src, b.Commit).CombinedOutput(); err != nil {
		return "", fmt.Errorf("upgrade base: git worktree add %s: %w\n%s", b.Commit, err, out)
	}
	defer func() {
		// context.Background: the worktree's record must go even when
		// the build was cancelled.
		_ = exec.Command("git", "-C", root, "worktree", "remove", "--force", src).Run()
		_ = exec.Command("git", "-C", root, "worktree", "prune").Run()
	}()
	bin := filepath.Join(tmp, "bin")
	args := []string{"build", "-tags", launch.BaseTag}
	if b.Version != "" {
		args = append(args, "-ldflags", "-X github.com/seqsvr/seqsvr/internal/version.Version="+b.Version)
	}
	args = append(args, "-o", bin+string(filepath.Separator), "./cmd/storesvr", "./cmd/allocsvr")
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("upgrade base: go build at %s: %w\n%s", b.Commit, err, out)
	}
	if err := os.Rename(bin, dir); err != nil {
		if baseBuilt(dir) { // another run built it meanwhile
			return dir, nil
		}
		return "", err
	}
	return dir, nil
}

func baseBuilt(dir string) bool {
	for _, k := range []launch.Kind{launch.KindStore, launch.KindAlloc} {
		if st, err := os.Stat(filepath.Join(dir, string(k))); err != nil || !st.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// baseBinaries builds (or finds) the base release's binaries: before the
// run's clock starts, so a first build does not eat into the run.
func baseBinaries(ctx context.Context, cfg Config) (string, Base, error) {
	root, err := launch.ModuleRoot(ctx)
	if err != nil {
		return "", Base{}, err
	}
	b, err := BaseRelease(ctx, root)
	if err != nil {
		return "", b, err
	}
	cache := cfg.BaseCache
	if cache == "" {
		cache = filepath.Join(root, "jepsen", "results", "bin")
	}
	dir, err := BuildBase(ctx, root, cache, b)
	return dir, b, err
}
