// Command covergate is the coverage gate of `make jepsen`: it reads the
// per-function figures `go tool covdata func` wrote for the run's
// instrumented servers (jepsen/cover.sh's DIR.func.txt) and fails when a
// function on a serving path was reached by no scenario, or is not in the
// profile at all (renamed or moved: the declaration needs fixing). The
// serving paths are not listed here: each procedure and Leaf route
// declares its own with its handler (routes.Procedure.Gated, Route.Gated:
// the paths that hand out IDs, and those that answer without, the store's
// reads and the Leaf routes' 405), and tables() gathers them.
//
//	go run ./jepsen/cmd/covergate jepsen/results/cover-<time>.func.txt
//
// It prints one line per listed function with its statement coverage and
// exits 1 if any was unreached or missing.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"

	"github.com/seqsvr/seqsvr/internal/routes"
)

const module = "github.com/seqsvr/seqsvr/"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: covergate FUNC_FILE (the output of go tool covdata func)")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer f.Close()
	os.Exit(gate(f, os.Stdout, tables().Gated()))
}

// gate writes the report of list against the covdata func figures in
// in, and returns the exit code: 0 when every function was reached.
func gate(in io.Reader, out io.Writer, list []routes.GatedFunc) int {
	figures, err := parse(in)
	if err != nil {
		fmt.Fprintln(out, "covergate:", err)
		return 2
	}
	var bad []string
	for _, e := range list {
		pct, ok := figures[e]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s %s: not in the coverage profile (renamed or moved? fix its Gated declaration in the routes table)", e.Pkg, e.Func))
		case pct == 0:
			bad = append(bad, fmt.Sprintf("%s %s: reached by no scenario", e.Pkg, e.Func))
		default:
			fmt.Fprintf(out, "  reached  %5.1f%%  %s %s\n", pct, e.Pkg, e.Func)
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(out, "serving paths: %d of %d functions FAIL the gate:\n", len(bad), len(list))
		for _, b := range bad {
			fmt.Fprintln(out, "  "+b)
		}
		return 1
	}
	fmt.Fprintf(out, "serving paths: all %d functions reached\n", len(list))
	return 0
}

// parse reads lines "module/dir/file.go:LINE:  FUNC  PCT%" into the
// highest figure per (dir, FUNC): a function defined in two files of
// different build tags appears once per file compiled.
func parse(in io.Reader) (map[routes.GatedFunc]float64, error) {
	out := map[routes.GatedFunc]float64{}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 || fields[0] == "total" || fields[0] == "total:" {
			continue
		}
		file, _, _ := strings.Cut(fields[0], ":")
		rel, ok := strings.CutPrefix(file, module)
		if !ok {
			continue
		}
		pct, err := strconv.ParseFloat(strings.TrimSuffix(fields[2], "%"), 64)
		if err != nil {
			return nil, fmt.Errorf("line %q: %v", sc.Text(), err)
		}
		k := routes.GatedFunc{Pkg: path.Dir(rel), Func: fields[1]}
		out[k] = max(out[k], pct)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no function figures of %s in the input", module)
	}
	return out, nil
}
