// Package nemesis injects faults into a running cluster on a seeded
// schedule: process kills, pauses, clock steps, membership changes and (as
// root, with network namespaces) partitions. Every injection and heal is
// logged with its time on the run clock, so a failing history can be read
// side by side with what was done to the cluster.
package nemesis

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"
)

// Event is one line of the nemesis log.
type Event struct {
	At     time.Duration `json:"at"` // since the run started (monotonic)
	Wall   time.Time     `json:"wall"`
	Fault  string        `json:"fault"`
	Phase  string        `json:"phase"` // inject, heal, skip, error, window, margin
	Target string        `json:"target,omitempty"`
	Detail string        `json:"detail,omitempty"`
	// End closes a window event: one run of the fault that injected
	// something lasted from At to End (Schedule records them).
	End time.Duration `json:"end,omitempty"`
	// Margin and Side: a margin event's safety margin and where the
	// aimed fault landed against it (margin.go).
	Margin string `json:"margin,omitempty"`
	Side   Side   `json:"side,omitempty"`
	// Refuses: a margin event outside a detected margin names the call
	// kind Target must not have answered from At to End (MarginRefused).
	Refuses string `json:"refuses,omitempty"`
}

// PhaseWindow marks a window event.
const PhaseWindow = "window"

// Log collects events; Injected counts injections per fault.
type Log struct {
	start time.Time
	mu    sync.Mutex
	evs   []Event
	count map[string]int
	out   io.Writer
}

// NewLog starts a log whose times are relative to start; each event is
// also written to out as a text line when out is not nil.
func NewLog(start time.Time, out io.Writer) *Log {
	return &Log{start: start, count: map[string]int{}, out: out}
}

func (l *Log) add(fault, phase, target, format string, args ...any) {
	e := Event{At: time.Since(l.start), Wall: time.Now(), Fault: fault, Phase: phase, Target: target, Detail: fmt.Sprintf(format, args...)}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, e)
	if phase == "inject" {
		l.count[fault]++
	}
	if l.out != nil {
		fmt.Fprintf(l.out, "%9.3fs %-22s %-6s %-8s %s\n", e.At.Seconds(), fault, phase, target, e.Detail)
	}
}

// Inject records an injected fault.
func (l *Log) Inject(fault, target, format string, args ...any) {
	l.add(fault, "inject", target, format, args...)
}

// Heal records the end of a fault.
func (l *Log) Heal(fault, target, format string, args ...any) {
	l.add(fault, "heal", target, format, args...)
}

// Error records a failed injection or heal.
func (l *Log) Error(fault, target string, err error) { l.add(fault, "error", target, "%v", err) }

// Skip records a fault that could not run now (e.g. no leader).
func (l *Log) Skip(fault, format string, args ...any) { l.add(fault, "skip", "", format, args...) }

// Window records that one run of fault, which injected something, lasted
// from since to now on the run clock: the report counts the operations
// that overlapped it, so a fault that never met the workload shows.
func (l *Log) Window(fault string, since time.Duration) {
	e := Event{At: since, End: time.Since(l.start), Wall: time.Now(), Fault: fault, Phase: PhaseWindow}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs = append(l.evs, e)
}

// Since is the run clock now.
func (l *Log) Since() time.Duration { return time.Since(l.start) }

// Injected is how many injections fault has had so far.
func (l *Log) Injected(fault string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.count[fault]
}

// Events returns a copy of the log.
func (l *Log) Events() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event{}, l.evs...)
}

// Counts returns injections per fault and their total.
func (l *Log) Counts() (map[string]int, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	m, n := map[string]int{}, 0
	for k, v := range l.count {
		m[k] = v
		n += v
	}
	return m, n
}

// SortedFaults lists fault names in a stable order.
func SortedFaults(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// WriteJSONL writes the events, one per line.
func (l *Log) WriteJSONL(w io.Writer) error {
	enc := json.NewEncoder(w)
	for _, e := range l.Events() {
		if err := enc.Encode(e); err != nil {
			return err
		}
	}
	return nil
}
