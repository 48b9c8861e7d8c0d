package doctest

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// shBlocks are the ```sh blocks of the section of doc (a path from the
// module root) under the heading "## heading", up to the next heading of
// that level or higher, with the fence's indentation (a block inside a
// list item) removed. A missing heading, or a section without exactly
// want blocks, fails t: the test would otherwise run nothing, or not what
// it expects.
func shBlocks(t *testing.T, doc, heading string, want int) []string {
	t.Helper()
	body, err := os.ReadFile("../../../" + doc)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(body), "\n")
	start := -1
	for i, l := range lines {
		if l == "## "+heading {
			start = i + 1
			break
		}
	}
	if start < 0 {
		t.Fatalf("%s has no heading %q", doc, "## "+heading)
	}
	var blocks []string
	for i := start; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "# ") || strings.HasPrefix(l, "## ") {
			break
		}
		indent, ok := strings.CutSuffix(l, "```sh")
		if !ok || strings.TrimSpace(indent) != "" {
			continue
		}
		var b strings.Builder
		for i++; ; i++ {
			if i == len(lines) {
				t.Fatalf("%s, %q: a ```sh block is not closed", doc, heading)
			}
			if strings.TrimSpace(lines[i]) == "```" {
				break
			}
			b.WriteString(strings.TrimPrefix(lines[i], indent) + "\n")
		}
		blocks = append(blocks, b.String())
	}
	if len(blocks) != want {
		t.Fatalf("%s, %q: %d ```sh block(s), want %d", doc, heading, len(blocks), want)
	}
	return blocks
}

// step is one command of a block, as written (with the lines a trailing
// backslash continues), and the output the block shows for it: the
// comment lines right after it that read as output (JSON, a number), not
// as prose.
type step struct {
	cmd  string
	want []string
}

// steps splits a block into its commands. Blank lines and prose comments
// between commands are left out.
func steps(block string) []step {
	var out []step
	var cur strings.Builder
	for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		trimmed := strings.TrimSpace(l)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			if c, ok := strings.CutPrefix(trimmed, "# "); ok && len(out) > 0 && looksLikeOutput(c) {
				out[len(out)-1].want = append(out[len(out)-1].want, c)
			}
			continue
		}
		cur.WriteString(l + "\n")
		if !strings.HasSuffix(l, `\`) {
			out = append(out, step{cmd: cur.String()})
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		out = append(out, step{cmd: cur.String()})
	}
	return out
}

// looksLikeOutput: a comment that is what a command printed, JSON or a
// number.
func looksLikeOutput(c string) bool {
	if _, err := strconv.ParseInt(c, 10, 64); err == nil {
		return true
	}
	return c != "" && strings.ContainsRune(`{["`, rune(c[0]))
}

// eachCommand rewrites every command of block (a line with the lines a
// trailing backslash continues) with f; comment and blank lines between
// commands stay as they are.
func eachCommand(block string, f func(cmd string) string) string {
	var b, cur strings.Builder
	for _, l := range strings.SplitAfter(block, "\n") {
		if l == "" {
			continue
		}
		trimmed := strings.TrimSpace(l)
		if cur.Len() == 0 && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			b.WriteString(l)
			continue
		}
		cur.WriteString(l)
		if !strings.HasSuffix(strings.TrimRight(l, "\n"), `\`) {
			b.WriteString(f(cur.String()))
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		b.WriteString(f(cur.String()))
	}
	return b.String()
}
