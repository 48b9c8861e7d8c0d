package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// smokeDefaults shape -smoke (flags given explicitly win): every target
// at 1 and 16 clients for a second, one leader kill per system. On 2 cores
// the whole run, processes started, is about a minute.
var smokeDefaults = map[string]any{
	"clients": "1,16", "rounds": 1, "d": time.Second, "warmup": 200 * time.Millisecond,
	"failover-d": 3 * time.Second, "kill-after": time.Second, "kills": 1, "failover-clients": 8,
}

// snowflakeTime is the -benchtime of the snowflake peer module's run.
func (c config) snowflakeTime() string {
	switch {
	case c.smoke:
		return "20ms"
	case c.short:
		return "200ms"
	}
	return "1s"
}

// smokeVerdict prints the smoke run's SKIPPED lines and the problems
// smokeCheck finds, and returns the exit status. The output directory is
// removed after a pass when it was the run's own temporary one, and kept
// (its path printed) after a failure.
func smokeVerdict(rep *report, outDir string, ownDir bool) int {
	for _, s := range rep.skipped {
		if slices.Contains(rep.notInstalled, s) {
			fmt.Printf("SKIPPED: %s\n", s)
		} else {
			fmt.Printf("bench-peers smoke: FAIL: left out: %s\n", s)
		}
	}
	problems := smokeCheck(rep, outDir)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Printf("bench-peers smoke: FAIL: %s\n", p)
		}
		fmt.Printf("bench-peers smoke: FAILED (%d problem(s)); report and plots kept in %s\n", len(problems), outDir)
		return 1
	}
	n := 0
	for _, ss := range [][]*series{rep.durable, rep.ids} {
		n += len(ss)
	}
	fmt.Printf("bench-peers smoke: ok: %d targets at clients %v, %d leader-kill runs, %d snowflake generators, report and plots checked (%s)\n",
		n, rep.cfg.clients, len(rep.failovers), len(rep.snowflake), rep.elapsed.Round(100*time.Millisecond))
	if ownDir {
		_ = os.RemoveAll(outDir)
	}
	return 0
}

// smokeCheck names everything wrong with a smoke run: a target or a
// client count without a successful call, a leader kill without a result,
// a peer left out although it is installed, a missing snowflake table,
// and a report or plot missing or malformed. Empty means it passed.
func smokeCheck(rep *report, outDir string) []string {
	var out []string
	if n := len(rep.skipped) - len(rep.notInstalled); n > 0 {
		out = append(out, fmt.Sprintf("%d peer(s) left out although installed or built for this run (the left out lines above)", n))
	}
	for _, ss := range [][]*series{rep.durable, rep.ids} {
		for _, s := range ss {
			for _, c := range rep.cfg.clients {
				if r, ok := s.res[c]; !ok || r.Ops == 0 {
					out = append(out, fmt.Sprintf("%s at %d clients: no successful call", s.t.label, c))
				}
			}
		}
	}
	if len(rep.durable) == 0 || len(rep.ids) == 0 {
		out = append(out, "no sweep ran")
	}
	if len(rep.failovers) == 0 {
		out = append(out, "no leader-kill run")
	}
	for _, g := range rep.failovers {
		if len(g.runs) == 0 {
			out = append(out, g.label+": not run")
		}
		for _, f := range g.runs {
			switch {
			case f.failed != "":
				out = append(out, g.label+": "+f.failed)
			case f.res.Ops == 0:
				out = append(out, g.label+": no successful call")
			case len(f.res.Timeline) == 0:
				out = append(out, g.label+": no timeline")
			}
		}
	}
	if rep.cfg.peerbenchDir != "" {
		if rep.snowflakeErr != nil {
			out = append(out, "snowflake peers: "+rep.snowflakeErr.Error())
		} else if len(rep.snowflake) == 0 {
			out = append(out, "snowflake peers: no result")
		}
	}
	return append(out, checkOutput(outDir)...)
}

// reportSections must each head a section of the report.
var reportSections = []string{"# seqsvr beside its peers", "## Headline", "## Setup", "## Durable write path",
	"## ID path", "## Leader kill under load", "## Snowflake libraries", "## Method and caveats"}

// wantPlots are drawn whenever the sweeps and kills produced results.
var wantPlots = []string{"peers-durable-throughput.svg", "peers-id-throughput.svg", "peers-durable-cdf.svg",
	"peers-id-cdf.svg", "peers-failover.svg", "peers-failover-errors.svg"}

var imageRef = regexp.MustCompile(`!\[[^\]]*\]\(([^)]+)\)`)

// checkOutput checks the written report and plots: the report has its
// sections, every plot it links exists, and every plot is a well-formed
// SVG document holding at least one drawn series.
func checkOutput(dir string) []string {
	var out []string
	md, err := os.ReadFile(filepath.Join(dir, "benchmarks-peers.md"))
	if err != nil {
		return append(out, "report: "+err.Error())
	}
	text := string(md)
	for _, s := range reportSections {
		if !strings.Contains(text, "\n"+s) && !strings.HasPrefix(text, s) {
			out = append(out, fmt.Sprintf("report: no %q section", s))
		}
	}
	if strings.Contains(text, "NaN") || strings.Contains(text, "%!") {
		out = append(out, "report: holds NaN or a formatting error (%!)")
	}
	linked := map[string]bool{}
	for _, m := range imageRef.FindAllStringSubmatch(text, -1) {
		linked[filepath.Base(m[1])] = true
		if _, err := os.Stat(filepath.Join(dir, m[1])); err != nil {
			out = append(out, "report links a missing plot: "+m[1])
		}
	}
	for _, name := range wantPlots {
		if !linked[name] {
			out = append(out, "report does not link "+name)
		}
		if err := checkSVG(filepath.Join(dir, "plots", name)); err != nil {
			out = append(out, fmt.Sprintf("plot %s: %v", name, err))
		}
	}
	return out
}

// checkSVG parses path as XML: the root must be <svg> and it must draw
// at least one line (a <path> or <polyline>); NaN coordinates fail it.
func checkSVG(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if bytes.Contains(b, []byte("NaN")) || bytes.Contains(b, []byte("+Inf")) || bytes.Contains(b, []byte("-Inf")) {
		return errors.New("holds NaN or Inf")
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	root, lines := "", 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("not well-formed XML: %w", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "path" || se.Name.Local == "polyline" {
				lines++
			}
		}
	}
	switch {
	case root != "svg":
		return fmt.Errorf("root element %q, want svg", root)
	case lines == 0:
		return errors.New("no series drawn (no path or polyline)")
	}
	return nil
}
