package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// binDir holds storesvr, allocsvr and seqctl built from this checkout by
// TestMain, for their --help, the probe test and the backup unit's run.
var binDir string

// help is each binary's flags and SEQSVR_* variables, from its --help.
var help = map[string]struct{ flags, env map[string]bool }{}

var helpLine = regexp.MustCompile(`(?m)^  --([a-z0-9-]+)\b.*\[(SEQSVR_[A-Z0-9_]+)\]`)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "seqsvr-deploy-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binDir = dir
	build := exec.Command("go", "build", "-tags", "hashicorpmetrics", "-o", dir+string(filepath.Separator), "./cmd/storesvr", "./cmd/allocsvr", "./cmd/seqctl")
	build.Dir = ".." // the seqsvr module
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 1
	}
	for _, bin := range []string{"storesvr", "allocsvr"} {
		out, err := exec.Command(filepath.Join(dir, bin), "--help").CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s --help: %v\n%s", bin, err, out)
			return 1
		}
		h := struct{ flags, env map[string]bool }{map[string]bool{}, map[string]bool{}}
		for _, m := range helpLine.FindAllStringSubmatch(string(out), -1) {
			h.flags[m[1]], h.env[m[2]] = true, true
		}
		if len(h.flags) < 10 {
			fmt.Fprintf(os.Stderr, "%s --help: only %d flags read:\n%s", bin, len(h.flags), out)
			return 1
		}
		help[bin] = h
	}
	return m.Run()
}

// flagName is NAME of an argument --NAME or --NAME=VALUE ("" for a value).
var flagArg = regexp.MustCompile(`^--?([a-z0-9-]+)(=.*)?$`)

// checkArgs fails for every flag of args and every SEQSVR_* name of env
// that bin's --help does not list.
func checkArgs(t *testing.T, where, bin string, args, env []string) {
	t.Helper()
	h, ok := help[bin]
	if !ok {
		t.Errorf("%s: runs %q, not storesvr or allocsvr", where, bin)
		return
	}
	for _, a := range args {
		if m := flagArg.FindStringSubmatch(a); m != nil && !h.flags[m[1]] {
			t.Errorf("%s: %s has no flag --%s", where, bin, m[1])
		}
	}
	for _, e := range env {
		if regexp.MustCompile(`^SEQSVR_`).MatchString(e) && !h.env[e] {
			t.Errorf("%s: %s reads no variable %s", where, bin, e)
		}
	}
}

// flagValue is the value of --name in args ("" if absent).
func flagValue(args []string, name string) string {
	for i, a := range args {
		if m := flagArg.FindStringSubmatch(a); m != nil && m[1] == name {
			if m[2] != "" {
				return m[2][1:]
			}
			if i+1 < len(args) {
				return args[i+1]
			}
		}
	}
	return ""
}
