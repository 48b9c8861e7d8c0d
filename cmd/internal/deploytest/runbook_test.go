package deploytest

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// A runbook is one alert's section of docs/alerts.md ("Alert runbooks"):
// the commands of its ```sh blocks, which find the cause, and of its
// ```sh fix blocks, which remove it where a command can (elsewhere the
// section's prose says what to restart or replace). Every block runs in
// a shell that has first run the section's preamble (the ```sh blocks
// between "## Alert runbooks" and the first alert): the helpers the
// blocks share.
type runbook struct {
	diagnose, fix []string
}

// runbooks reads docs/alerts.md's runbooks, by alert name, and the
// preamble.
func runbooks(t *testing.T) (map[string]runbook, string) {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	books := map[string]runbook{}
	var preamble strings.Builder
	in, alert, kind, indent := false, "", "", ""
	var block strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fence := strings.TrimSpace(line) // a block in a list item is indented
		switch {
		case kind != "" && fence == "```":
			rb := books[alert]
			switch {
			case alert == "":
				preamble.WriteString(block.String())
			case kind == "fix":
				rb.fix = append(rb.fix, block.String())
			default:
				rb.diagnose = append(rb.diagnose, block.String())
			}
			if alert != "" {
				books[alert] = rb
			}
			kind = ""
			block.Reset()
		case kind != "":
			block.WriteString(strings.TrimPrefix(line, indent) + "\n")
		case strings.HasPrefix(line, "## "):
			in, alert = line == "## Alert runbooks", ""
		case in && strings.HasPrefix(line, "### "):
			alert = strings.TrimPrefix(line, "### ")
			books[alert] = runbook{}
		case in && (fence == "```sh" || fence == "```sh fix"):
			kind, indent = "diagnose", line[:len(line)-len(strings.TrimLeft(line, " "))]
			if fence == "```sh fix" {
				kind = "fix"
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return books, preamble.String()
}

// alertNames are the alerts of deploy/prometheus/alerts.yml, sorted.
func alertNames(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+- alert: (\S+)$`).FindAllSubmatch(b, -1) {
		names = append(names, string(m[1]))
	}
	sort.Strings(names)
	return names
}

// TestEveryAlertHasARunbookOfCommands: every alert of alerts.yml has a
// section in docs/alerts.md with commands (a ```sh block), every block
// is valid shell, and every alert is drilled (TestAlertRunbookDrills); a
// runbook of an alert that no longer exists is an error too.
func TestEveryAlertHasARunbookOfCommands(t *testing.T) {
	books, preamble := runbooks(t)
	names := alertNames(t)
	if len(names) < 15 {
		t.Fatalf("only %d alerts read from alerts.yml", len(names))
	}
	if !strings.Contains(preamble, "get()") {
		t.Errorf("the runbooks' preamble defines no get(): %q", preamble)
	}
	drilled := map[string]bool{}
	for _, d := range drills {
		for _, a := range d.alerts {
			drilled[a] = true
		}
	}
	for _, name := range names {
		rb, ok := books[name]
		switch {
		case !ok:
			t.Errorf("%s: no section in docs/alerts.md's Alert runbooks", name)
		case len(rb.diagnose) == 0:
			t.Errorf("%s: its runbook has no ```sh block of commands", name)
		}
		for _, b := range append(slices.Clone(rb.diagnose), rb.fix...) {
			if out, err := exec.Command("bash", "-n", "-c", preamble+b).CombinedOutput(); err != nil {
				t.Errorf("%s: a block is not valid shell: %v\n%s\n%s", name, err, out, b)
			}
		}
		if !drilled[name] {
			t.Errorf("%s: no drill runs its runbook (add one to drills)", name)
		}
	}
	for name := range books {
		if !slices.Contains(names, name) {
			t.Errorf("docs/alerts.md has a runbook for %s, which alerts.yml does not have", name)
		}
	}
	for name := range drilled {
		if !slices.Contains(names, name) {
			t.Errorf("a drill fires %s, which alerts.yml does not have", name)
		}
	}
}
