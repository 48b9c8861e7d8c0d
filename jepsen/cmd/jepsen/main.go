// Command jepsen runs the fault-injection matrix against real storesvr and
// allocsvr processes and prints a summary table per run plus the results
// folder. It exits 1 when any checker fails.
//
//	go run -tags hashicorpmetrics ./jepsen/cmd/jepsen -mode full
//
// -scenario runs some scenarios of the mode, with the seeds they get in
// the whole mode's run, and -duration sets each run's length (-only is the
// old name of -scenario):
//
//	go run -tags hashicorpmetrics ./jepsen/cmd/jepsen -mode full -scenario kills,clock -duration 30s -seed 7
//
// The rule that a full matrix injects at least 1000 faults applies only to
// the whole matrix at its default length.
//
// With -check it runs nothing: it re-checks what a run saved, in one
// scenario's results folder or in each scenario folder of a run's.
//
//	go run -tags hashicorpmetrics ./jepsen/cmd/jepsen -check jepsen/results/<time>/mixed
package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/jepsen/harness"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

func main() {
	mode := flag.String("mode", "smoke", "smoke (one short mixed run), full (the matrix) or bugs (the planted-bug runs)")
	seed := flag.Int64("seed", time.Now().UnixNano()%1_000_000, "schedule seed (printed; rerun with it)")
	out := flag.String("out", "", "results folder (default jepsen/results/<time>)")
	duration := flag.Duration("duration", 0, "per-run duration (default 60s smoke, 100s per full scenario, 25s per bug)")
	verbose := flag.Bool("v", false, "log process starts and nemesis events")
	check := flag.String("check", "", "re-check a saved results folder (a scenario's, or a run's holding several) instead of running")
	var scenarios string
	flag.StringVar(&scenarios, "scenario", "", "comma-separated scenario names of the mode to run, e.g. -mode full -scenario kills,clock (default all)")
	flag.StringVar(&scenarios, "only", "", "the old name of -scenario")
	plain := flag.Bool("plain", false, "run the clusters without auth and TLS (default: the secure mode, HTTPS + tokens + Raft over mutual TLS)")
	flag.Parse()
	if *check != "" {
		os.Exit(recheck(os.Stdout, *check))
	}
	var names []string
	if scenarios != "" {
		names = strings.Split(scenarios, ",")
	}
	os.Exit(run(*mode, names, *seed, *out, *duration, *verbose, *plain))
}

func run(mode string, only []string, seed int64, out string, d time.Duration, verbose, plain bool) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if out == "" {
		root, err := launch.ModuleRoot(ctx)
		if err != nil {
			root = "."
		}
		out = filepath.Join(root, "jepsen", "results", time.Now().Format("20060102-150405"))
	}
	netErr := nemesis.NetAvailable()
	parts := netErr == nil
	if !parts {
		fmt.Printf("note: network partitions disabled: %v\n", netErr)
	}
	var cfgs []harness.Config
	switch mode {
	case "smoke":
		cfgs = []harness.Config{harness.Smoke(cmp.Or(d, 60*time.Second), parts)}
	case "full":
		cfgs = harness.Full(cmp.Or(d, 100*time.Second), parts)
	case "bugs":
		for _, b := range harness.Bugs() {
			cfgs = append(cfgs, harness.PlantedBug(b, cmp.Or(d, 25*time.Second)))
		}
	default:
		fmt.Fprintf(os.Stderr, "unknown -mode %q\n", mode)
		return 2
	}
	for _, n := range only {
		if !slices.ContainsFunc(cfgs, func(c harness.Config) bool { return c.Name == n }) {
			fmt.Fprintf(os.Stderr, "-scenario: mode %s has no scenario %q\n", mode, n)
			return 2
		}
	}
	bin := filepath.Join(out, "bin")
	var reports []*harness.Report
	total := 0
	code := 0
	for i, cfg := range cfgs {
		if len(only) > 0 && !slices.Contains(only, cfg.Name) {
			continue
		}
		cfg.Seed = seed + int64(i)
		cfg.OutDir = filepath.Join(out, cfg.Name)
		cfg.BinDir = bin
		cfg.Plain = plain
		if verbose {
			cfg.Logf = func(f string, a ...any) { fmt.Printf(f+"\n", a...) }
		}
		security := "secure"
		if plain {
			security = "plain"
		}
		fmt.Printf("-- running %s for %s (seed %d, %s, faults %s)\n", cfg.Name, cfg.Duration, cfg.Seed, security, strings.Join(cfg.Faults, ","))
		rep, err := harness.Run(ctx, cfg)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", cfg.Name, err)
			return 1
		}
		fmt.Println(rep.Table())
		reports = append(reports, rep)
		total += rep.FaultTotal
		if len(cfg.Bugs) == 0 {
			if !rep.OK {
				code = 1
			}
		} else if ok, why := harness.Caught(rep, cfg.Bugs[0]); ok {
			fmt.Printf("planted bug %s caught by: %s\n\n", cfg.Bugs[0], why)
		} else {
			fmt.Printf("planted bug %s NOT caught: %s\n\n", cfg.Bugs[0], why)
			code = 1
		}
		if ctx.Err() != nil {
			break
		}
	}
	summary(os.Stdout, reports)
	fmt.Printf("  total faults injected: %d\n  results: %s\n", total, out)
	if mode == "full" && len(only) == 0 && d == 0 && ctx.Err() == nil && total < fullFaultTarget {
		fmt.Printf("  FAIL: the full matrix must inject at least %d faults\n", fullFaultTarget)
		code = 1
	}
	if mode == "bugs" {
		fmt.Println("  (bugs mode: every run is expected to FAIL, through the checker that the bug's symptom trips; exit status 1 means a planted bug went unnoticed)")
	}
	return code
}

func summary(w io.Writer, reports []*harness.Report) {
	fmt.Fprintln(w, "== summary")
	for _, r := range reports {
		v := "PASS"
		if !r.OK {
			v = "FAIL: " + strings.Join(r.Failed(), "; ")
		}
		if n := r.Skipped(); n > 0 {
			v += fmt.Sprintf(" (%d checker(s) skipped)", n)
		}
		fmt.Fprintf(w, "  %-18s ops %7d  faults %5d  %s\n", r.Name, r.Ops, r.FaultTotal, v)
	}
	// Which safety margins each scenario's aimed faults hit, and on
	// which side (docs/fault-injection.md, "Margins").
	fmt.Fprintln(w, "== margins aimed at (inside/outside)")
	for _, r := range reports {
		fmt.Fprintf(w, "  %-18s %s\n", r.Name, nemesis.FormatMarginHits(r.Margins))
	}
}

// fullFaultTarget is the fewest faults a full matrix must inject to count
// as one (measured: about 1050 at 90 s per scenario on a 2-core box).
const fullFaultTarget = 1000
