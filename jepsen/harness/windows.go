package harness

import (
	"fmt"
	"strings"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/history"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

// FaultFigures are one fault kind's line of the report: how often it was
// injected, its windows (a window is one run of the fault, from its start
// to its heal, during which an injection of its kind was logged; with two
// copies of a lane, a run may count the other copy's injection, so there
// can be more windows than injections), and how many client operations
// overlapped one of those windows (and how many of them succeeded). A
// fault with injections but no operation in its windows never met the
// workload and proved nothing.
type FaultFigures struct {
	Injected int           `json:"injected"`
	Windows  int           `json:"windows"`
	Span     time.Duration `json:"span"` // summed window length
	Ops      int           `json:"ops"`
	OKOps    int           `json:"ok_ops"`
}

// faultFigures pairs every window event with the operations whose
// [call, return] interval overlaps it. An operation counts once per fault
// kind however many of its windows it overlaps.
func faultFigures(evs []nemesis.Event, ops []*history.Op) map[string]FaultFigures {
	out := map[string]FaultFigures{}
	wins := map[string][][2]int64{}
	for _, e := range evs {
		f := out[e.Fault]
		switch e.Phase {
		case "inject":
			f.Injected++
		case nemesis.PhaseWindow:
			f.Windows++
			f.Span += e.End - e.At
			wins[e.Fault] = append(wins[e.Fault], [2]int64{int64(e.At), int64(e.End)})
		default:
			continue
		}
		out[e.Fault] = f
	}
	for name, ws := range wins {
		f := out[name]
		for _, op := range ops {
			for _, w := range ws {
				if op.Call <= w[1] && op.Return >= w[0] {
					f.Ops++
					if op.OK {
						f.OKOps++
					}
					break
				}
			}
		}
		out[name] = f
	}
	return out
}

// faultLines renders faultFigures, one line per kind, flagging a kind
// that was injected but overlapped no operation.
func faultLines(m map[string]FaultFigures) string {
	var b strings.Builder
	counts := map[string]int{}
	for k := range m {
		counts[k] = 1
	}
	for _, k := range nemesis.SortedFaults(counts) {
		f := m[k]
		if f.Injected == 0 {
			continue
		}
		flag := ""
		if f.Ops == 0 {
			flag = "  <- no operation ran within it"
		}
		fmt.Fprintf(&b, "  fault %-20s injected %4d, windows %4d (%6.1fs); ops within: %6d (%d ok)%s\n",
			k, f.Injected, f.Windows, f.Span.Seconds(), f.Ops, f.OKOps, flag)
	}
	return b.String()
}
