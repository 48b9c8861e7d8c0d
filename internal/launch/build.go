package launch

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// BaseTag is always passed to go build: the servers' metrics need it.
const BaseTag = "hashicorpmetrics"

var (
	buildMu   sync.Mutex
	buildDone = map[string]bool{}
)

// Build compiles cmd/storesvr and cmd/allocsvr into binDir with
// `-tags hashicorpmetrics[,tags]`, at the module root. It runs the compiler
// once per (binDir, tags) in this process, so many tests may call it.
func Build(ctx context.Context, binDir string, tags ...string) error {
	return BuildPackages(ctx, binDir, append([]string{BaseTag}, tags...), "./cmd/storesvr", "./cmd/allocsvr")
}

// CoverPkgEnv, when set, makes every build here a `go build -cover
// -covermode=atomic -coverpkg=` of its value. It must name the main
// packages too: a binary whose main package is not instrumented registers
// no coverage meta-data and writes nothing.
const CoverPkgEnv = "SEQSVR_COVERPKG"

// BuildPackages runs `go build -tags tags -o binDir/ pkgs...` at the
// module root (pkgs are relative to it, e.g. "./bench/loadgen"), once per
// (binDir, tags, pkgs) in this process.
func BuildPackages(ctx context.Context, binDir string, tags []string, pkgs ...string) error {
	tagList := strings.Join(tags, ",")
	abs, err := filepath.Abs(binDir)
	if err != nil {
		return err
	}
	key := abs + "|" + tagList + "|" + strings.Join(pkgs, " ")
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDone[key] {
		return nil
	}
	root, err := ModuleRoot(ctx)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return err
	}
	args := []string{"build", "-tags", tagList, "-o", abs + string(filepath.Separator)}
	if cp := os.Getenv(CoverPkgEnv); cp != "" {
		// make jepsen: coverage-instrumented binaries (jepsen/cover.sh
		// reports). Atomic counters, so a running process can write them
		// (runtime/coverage.WriteCountersDir).
		args = append(args, "-cover", "-covermode=atomic", "-coverpkg="+cp)
	}
	args = append(args, pkgs...)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("cluster: go build -tags %q %s: %w\n%s", tagList, strings.Join(pkgs, " "), err, out)
	}
	buildDone[key] = true
	return nil
}

// ModuleRoot is the directory holding go.mod of the module this process
// (or test) runs in.
func ModuleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("cluster: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("cluster: not inside a Go module (go env GOMOD is %q)", mod)
	}
	return filepath.Dir(mod), nil
}
