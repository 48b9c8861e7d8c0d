// Package checker decides whether a recorded history (package history)
// upholds the guarantees of the seqsvr contract. Each check returns a
// Result; a check that could not decide (porcupine timed out, an operation
// whose outcome stayed unknown) is a failure, never a pass.
package checker

import "fmt"

// Checker names, as they appear in Result.Name and the summary table.
const (
	Linearizability       = "store linearizable (porcupine)"
	SegmentsDisjointName  = "reserved segments disjoint"
	FinalMaxID            = "final max_id agreed and durable"
	SegmentUnique         = "segment IDs unique"
	SegmentMonotonic      = "segment IDs increasing per allocsvr lifetime"
	SegmentWithinReserved = "segment IDs within reserved range"
	SnowflakeUnique       = "snowflake IDs unique"
	SnowflakeMonotonic    = "snowflake IDs increasing per allocsvr lifetime"
	SnowflakeTimeline     = "snowflake per-worker timestamps increasing"
	SnowflakeExclusive    = "snowflake worker IDs held by one live process"
	SnowflakeDecoded      = "snowflake IDs decoded as their bits say"
	SeqOrderName          = "per-key sequences in real-time order"
	SeqUniqueName         = "per-key NextSeq values unique"
	IdempotentName        = "re-sent request_ids answer their first segment"
	SegmentNoBurned       = "solo-tag IDs not burned within an allocsvr lifetime"
)

// Result is one checker's verdict.
type Result struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Undecided marks a failure because the check could not decide (an
	// unresolved operation, porcupine's time limit), as opposed to a
	// violation it found.
	Undecided bool   `json:"undecided,omitempty"`
	Checked   int    `json:"checked"` // operations or IDs examined
	Detail    string `json:"detail"`
	Artifact  string `json:"artifact,omitempty"` // e.g. the porcupine HTML file
}

func pass(name string, n int, format string, args ...any) Result {
	return Result{Name: name, OK: true, Checked: n, Detail: fmt.Sprintf(format, args...)}
}

func fail(name string, n int, format string, args ...any) Result {
	return Result{Name: name, OK: false, Checked: n, Detail: fmt.Sprintf(format, args...)}
}

// maxErrors bounds the examples a failing check lists.
const maxErrors = 5

type problems struct {
	n    int
	msgs []string
}

func (p *problems) add(format string, args ...any) {
	p.n++
	if len(p.msgs) < maxErrors {
		p.msgs = append(p.msgs, fmt.Sprintf(format, args...))
	}
}

func (p *problems) String() string {
	s := fmt.Sprintf("%d violation(s)", p.n)
	for _, m := range p.msgs {
		s += "; " + m
	}
	return s
}
