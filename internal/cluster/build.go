package cluster

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
	allTags := append([]string{BaseTag}, tags...)
	tagList := strings.Join(allTags, ",")
	abs, err := filepath.Abs(binDir)
	if err != nil {
		return err
	}
	key := abs + "|" + tagList
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
	cmd := exec.CommandContext(ctx, "go", "build", "-tags", tagList, "-o", abs+string(filepath.Separator), "./cmd/storesvr", "./cmd/allocsvr")
	cmd.Dir = root
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("cluster: go build -tags %s ./cmd/storesvr ./cmd/allocsvr: %w\n%s", tagList, err, out)
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
