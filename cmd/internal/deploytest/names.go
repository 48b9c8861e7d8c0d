package deploytest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
)

// DashboardExprs are the PromQL expressions of every panel target of a
// Grafana dashboard JSON (rows' nested panels too).
func DashboardExprs(r io.Reader) ([]string, error) {
	type panel struct {
		Title   string  `json:"title"`
		Panels  []panel `json:"panels"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	}
	var d struct {
		Panels []panel `json:"panels"`
	}
	if err := json.NewDecoder(r).Decode(&d); err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	var out []string
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				out = append(out, t.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out, nil
}

// RuleExprs are the `expr:` values of a Prometheus rule file, read line by
// line (seqsvr's go.mod has no YAML library, and the rule file keeps to
// two forms): `expr: EXPR` on one line, or `expr: |` followed by a block
// indented deeper than the key.
func RuleExprs(r io.Reader) ([]string, error) {
	var out []string
	lines := bufio.NewScanner(r)
	block, blockIndent := -1, 0 // index in out of the block being read
	for lines.Scan() {
		line := lines.Text()
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		if block >= 0 {
			if trimmed == "" || indent > blockIndent {
				out[block] += " " + strings.TrimSpace(line)
				continue
			}
			block = -1
		}
		v, ok := strings.CutPrefix(trimmed, "expr:")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch {
		case v == "|" || v == ">":
			out = append(out, "")
			block, blockIndent = len(out)-1, indent
		case v == "":
			return nil, fmt.Errorf("rules: empty expr: %q", line)
		default:
			out = append(out, strings.Trim(v, `'"`))
		}
	}
	return out, lines.Err()
}

var (
	strLit   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	matchers = regexp.MustCompile(`\{[^}]*\}`)
	ranges   = regexp.MustCompile(`\[[^\]]*\]`)
	grouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	keywords = []string{"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset", "inf", "nan", "Inf", "NaN"}
)

// MetricNames are the metric names a PromQL expression selects: its
// identifiers that are not functions, aggregations (followed by '('),
// keywords, label names (inside {} or a grouping clause) or numbers.
func MetricNames(expr string) []string {
	e := strLit.ReplaceAllString(expr, `""`)
	e = matchers.ReplaceAllString(e, " ")
	e = ranges.ReplaceAllString(e, " ")
	e = grouping.ReplaceAllString(e, " ")
	var out []string
	for i := 0; i < len(e); {
		start := i
		if !isIdent(e[i], false) || i > 0 && (isIdent(e[i-1], true) || e[i-1] == '.' || e[i-1] == '$') {
			i++
			continue
		}
		for i < len(e) && isIdent(e[i], true) {
			i++
		}
		name := e[start:i]
		next := strings.TrimLeft(e[i:], " \t\n")
		call := strings.HasPrefix(next, "(")
		if slices.Contains(keywords, name) || call || slices.Contains(out, name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

func isIdent(c byte, inside bool) bool {
	return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || inside && '0' <= c && c <= '9'
}

// Exposed reads a /metrics text exposition: every family declared by
// # TYPE and every sample name (histogram and summary samples carry
// _bucket, _sum and _count).
func Exposed(r io.Reader, into map[string]bool) error {
	lines := bufio.NewScanner(r)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() {
		line := lines.Text()
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, _, _ := strings.Cut(rest, " ")
			into[name] = true
			continue
		}
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			into[line[:i]] = true
		}
	}
	return lines.Err()
}
