package harness

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/history"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

// Report is the outcome of one run.
type Report struct {
	Name       string            `json:"name"`
	Seed       int64             `json:"seed"`
	OutDir     string            `json:"out_dir"`
	Bugs       []string          `json:"bugs,omitempty"`
	Ops        int               `json:"ops"`
	OpsByKind  map[string][2]int `json:"ops_by_kind"` // kind -> [total, ok]
	Resolved   int               `json:"resolved"`
	Unresolved int               `json:"unresolved"`
	NotSent    int               `json:"not_sent"` // failed reservations that never left the client
	// OpenWrites are tag writes (create, update, delete) whose outcome
	// stayed unknown; porcupine lets each take effect anywhere after its
	// call, or never.
	OpenWrites int `json:"open_writes"`
	// OpsByPath counts the operations of each serving path
	// (history.Paths): path -> [total, ok].
	OpsByPath map[string][2]int `json:"ops_by_path,omitempty"`
	// FrontAnswered is each process's count of requests its HTTP/1.1
	// front answered (seqsvr_http_fast_requests_total) over its lifetimes,
	// read every 2 s (frontTally).
	FrontAnswered map[string]int64 `json:"front_answered,omitempty"`
	// FrontHandoffs is each process's connections handed by its front to
	// net/http, by reason (seqsvr_http_handoffs_total), likewise.
	FrontHandoffs map[string]map[string]int64 `json:"front_handoffs,omitempty"`
	// Spaces sums up the per-key calls of each space.
	Spaces map[string]SpaceFigures `json:"spaces,omitempty"`

	Faults     map[string]int `json:"faults"`
	FaultTotal int            `json:"fault_total"`
	// FaultKinds is each fault kind's injections and the operations that
	// ran within its windows.
	FaultKinds map[string]FaultFigures `json:"fault_kinds,omitempty"`
	// Margins counts the aimed faults per safety margin and side
	// (nemesis.Margin): which margins this run hit inside and outside.
	Margins map[string]map[nemesis.Side]int `json:"margins,omitempty"`
	Results []Verdict                       `json:"results"`
	OK      bool                            `json:"ok"`
	Notes   []string                        `json:"notes,omitempty"`
	Elapsed time.Duration                   `json:"elapsed"`
}

// SpaceFigures are one space's per-key calls: how many and how many
// succeeded, the keys they named, the values the successful NextSeq
// calls took, and the largest value any call answered.
type SpaceFigures struct {
	Calls  int   `json:"calls"`
	OK     int   `json:"ok"`
	Keys   int   `json:"keys"`
	Taken  int   `json:"taken"`
	MaxSeq int64 `json:"max_seq"`
}

func spaceFigures(ops []*history.Op) map[string]SpaceFigures {
	out := map[string]SpaceFigures{}
	keys := map[string]map[uint64]bool{}
	for _, op := range ops {
		if op.Space == "" || op.Kind == history.GetSpace || op.Kind == history.GetRouting {
			continue // the store's reads of a space are not per-key calls
		}
		f := out[op.Space]
		f.Calls++
		if keys[op.Space] == nil {
			keys[op.Space] = map[uint64]bool{}
		}
		for _, k := range op.Keys {
			keys[op.Space][k] = true
		}
		if op.OK {
			f.OK++
			if op.SeqIncrements() {
				f.Taken += len(op.Seqs)
			}
			for _, v := range op.Seqs {
				f.MaxSeq = max(f.MaxSeq, v)
			}
		}
		f.Keys = len(keys[op.Space])
		out[op.Space] = f
	}
	return out
}

// Failed lists the names of failing checkers (not the skipped ones).
func (r *Report) Failed() []string {
	var out []string
	for _, c := range r.Results {
		if !c.OK && c.Skipped == "" {
			out = append(out, c.Name)
		}
	}
	return out
}

// Table renders the summary.
func (r *Report) Table() string {
	var b strings.Builder
	verdict := "PASS"
	if !r.OK {
		verdict = "FAIL"
	}
	if n := r.Skipped(); n > 0 {
		verdict += fmt.Sprintf(" (%d checker(s) skipped)", n)
	}
	fmt.Fprintf(&b, "== %s (seed %d) %s in %s; results: %s\n", r.Name, r.Seed, verdict, r.Elapsed.Round(time.Second), r.OutDir)
	if len(r.Bugs) > 0 {
		fmt.Fprintf(&b, "planted bugs: %s\n", strings.Join(r.Bugs, ","))
	}
	kinds := make([]string, 0, len(r.OpsByKind))
	for k := range r.OpsByKind {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "operations: %d (", r.Ops)
	for i, k := range kinds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d/%d ok", k, r.OpsByKind[k][1], r.OpsByKind[k][0])
	}
	fmt.Fprintf(&b, "); unknown reservations resolved %d, unresolved %d (%d more failed to connect: not sent); tag writes of unknown outcome %d\n",
		r.Resolved, r.Unresolved, r.NotSent, r.OpenWrites)
	if len(r.OpsByPath) > 0 {
		b.WriteString("serving paths:")
		for _, p := range history.Paths {
			if v, ok := r.OpsByPath[p]; ok {
				fmt.Fprintf(&b, " %s %d/%d ok;", p, v[1], v[0])
			}
		}
		if len(r.FrontAnswered) > 0 {
			b.WriteString(" answered by the HTTP/1.1 fronts (read every 2 s):")
			for _, name := range slices.Sorted(maps.Keys(r.FrontAnswered)) {
				fmt.Fprintf(&b, " %s %d", name, r.FrontAnswered[name])
				if h := r.FrontHandoffs[name]; len(h) > 0 {
					var parts []string
					for _, reason := range slices.Sorted(maps.Keys(h)) {
						parts = append(parts, fmt.Sprintf("%s %d", reason, h[reason]))
					}
					fmt.Fprintf(&b, " (connections handed off: %s)", strings.Join(parts, ", "))
				}
			}
		}
		b.WriteString("\n")
	}
	for _, name := range slices.Sorted(maps.Keys(r.Spaces)) {
		f := r.Spaces[name]
		fmt.Fprintf(&b, "space %s: calls %d/%d ok, %d keys, %d values taken, max value %d\n", name, f.OK, f.Calls, f.Keys, f.Taken, f.MaxSeq)
	}
	fmt.Fprintf(&b, "faults injected: %d (", r.FaultTotal)
	for i, k := range nemesis.SortedFaults(r.Faults) {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %d", k, r.Faults[k])
	}
	b.WriteString(")\n")
	b.WriteString(faultLines(r.FaultKinds))
	if len(r.Margins) > 0 {
		fmt.Fprintf(&b, "margins aimed at: %s\n", nemesis.FormatMarginHits(r.Margins))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "checker\tverdict\tchecked\tdetail")
	for _, c := range r.Results {
		v := "pass"
		switch {
		case c.Skipped != "":
			v = "skipped"
		case !c.OK:
			v = "FAIL"
		}
		d := c.Detail
		if c.Skipped != "" {
			d = c.Skipped
		}
		if len(d) > 300 {
			d = d[:300] + "..."
		}
		if c.Artifact != "" {
			d += " [" + c.Artifact + "]"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", c.Name, v, c.Checked, d)
	}
	tw.Flush()
	return b.String()
}

func (r *Report) write() error {
	if err := os.WriteFile(filepath.Join(r.OutDir, "summary.txt"), []byte(r.Table()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.OutDir, "summary.json"), js, 0o644)
}
