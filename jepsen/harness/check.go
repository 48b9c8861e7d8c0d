package harness

import (
	"fmt"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/checker"
	"github.com/seqsvr/seqsvr/jepsen/history"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

// linearizableTimeout bounds porcupine, live and offline alike, so that a
// re-check decides what the run decided.
const linearizableTimeout = 2 * time.Minute

// Inputs is everything the checkers read. A live run builds it from its
// recorder and the cluster; a re-check loads it from the results folder.
type Inputs struct {
	Ops []*history.Op
	// Final is nil for a folder saved before runs wrote final.json; the
	// checkers that need it are then skipped, not passed.
	Final *Final
	// Events is the nemesis log (nemesis.jsonl): guarantee 9's checker
	// excuses a per-key outage only by a fault that explains it.
	Events []nemesis.Event
}

// Final is what the run learned after the workload stopped, saved as
// final.json next to history.jsonl.
type Final struct {
	// Tags are every tag the run created, including any no operation
	// touched: each must have the same max_id on every member.
	Tags []string `json:"tags"`
	// MaxID maps member -> tag -> max_id, read from each member's own
	// applied state; a tag a member did not answer for is absent.
	MaxID     map[string]map[string]int64 `json:"max_id"`
	Snowflake Layout                      `json:"snowflake_layout"`
	// LeaseTTL is the stores' --worker-lease-ttl, which bounds how far
	// apart two responses of one holder prove it held its worker ID.
	LeaseTTL time.Duration `json:"lease_ttl"`
	// SeqLeaseTTL is the stores' --seq-lease-ttl, which bounds how long a
	// dead allocsvr's sections may stay unserved (guarantee 9); zero in a
	// folder saved before runs recorded it.
	SeqLeaseTTL time.Duration `json:"seq_lease_ttl,omitempty"`
	// Upgrade is what the upgrade scenario did; nil in other scenarios.
	Upgrade *Upgrade `json:"upgrade,omitempty"`
	// RaftLogs is the comparison of the members' raft logs at the end;
	// nil in a folder saved before runs made it.
	RaftLogs *checker.RaftLogs `json:"raft_logs,omitempty"`
}

// Layout is the snowflake layout the snowflake checkers decoded IDs with.
type Layout struct {
	EpochMs      int64 `json:"epoch_ms"`
	WorkerBits   int   `json:"worker_bits"`
	SequenceBits int   `json:"sequence_bits"`
	// From names the allocsvr that reported it; empty when none answered
	// and the harness assumed the default.
	From string `json:"from,omitempty"`
}

func (l Layout) checker() checker.Layout {
	return checker.Layout{EpochMs: l.EpochMs, WorkerBits: l.WorkerBits, SequenceBits: l.SequenceBits}
}

// Verdict is one row of the summary: a checker's result, or why it did
// not run.
type Verdict struct {
	checker.Result
	// Skipped is why the checker did not run: the saved run lacks data it
	// needs. A skipped checker neither passes nor fails the run; its
	// Result is a non-passing, undecided one, so nothing that reads only
	// OK can take it for a pass.
	Skipped string `json:"skipped,omitempty"`
}

func ran(r checker.Result) Verdict { return Verdict{Result: r} }

func skipped(name, why string) Verdict {
	return Verdict{Result: checker.Result{Name: name, Undecided: true, Detail: "skipped: " + why}, Skipped: why}
}

const noFinal = "the run saved no " + finalFile + " (an older run)"

// Check runs every checker on in, in the order of the summary table; a
// porcupine visualization of a violation goes to outDir.
func Check(in Inputs, outDir string) []Verdict {
	ops := in.Ops
	out := []Verdict{
		ran(checker.Progress(ops)),
		ran(linearizableFirst(ops, outDir, in.Events)),
		ran(checker.SegmentsDisjoint(ops)),
	}
	f := in.Final
	if f == nil {
		out = append(out, skipped(checker.FinalMaxID, noFinal+": needs every member's final max_id"))
	} else {
		out = append(out, ran(checker.FinalState(ops, f.MaxID, f.Tags)))
	}
	if f == nil || f.RaftLogs == nil {
		out = append(out, skipped(checker.RaftLogsName, "the run did not compare the members' raft logs (a folder saved before it did)"))
	} else {
		out = append(out, ran(checker.RaftLogsAgree(f.RaftLogs)))
	}
	out = append(out,
		ran(checker.UniqueIDs(ops, history.NextIDs)),
		ran(checker.MonotonicPerLifetime(ops, history.NextIDs)),
	)
	if f == nil {
		out = append(out, skipped(checker.SegmentWithinReserved, noFinal+": needs the final max_id of each tag"))
	} else {
		out = append(out, ran(checker.WithinReserved(ops, agreedMax(f.MaxID))))
	}
	out = append(out,
		ran(checker.UniqueIDs(ops, history.Snowflake)),
		ran(checker.MonotonicPerLifetime(ops, history.Snowflake)),
	)
	if f == nil {
		out = append(out,
			skipped(checker.SnowflakeTimeline, noFinal+": needs the snowflake layout"),
			skipped(checker.SnowflakeExclusive, noFinal+": needs the snowflake layout and the lease TTL"),
			skipped(checker.SnowflakeDecoded, noFinal+": needs the snowflake layout"))
	} else {
		l := f.Snowflake.checker()
		out = append(out,
			ran(checker.WorkerTimeline(ops, l)),
			ran(checker.WorkerExclusive(ops, l, f.LeaseTTL*2/3)),
			ran(checker.SnowflakeDecode(ops, l)))
	}
	if f != nil && f.Upgrade != nil {
		out = append(out, ran(f.Upgrade.Verdict()))
	}
	out = append(out, ran(checker.SeqOrder(ops)), ran(checker.SeqUnique(ops)), ran(idempotentPerCluster(ops, in.Events)),
		ran(checker.NoBurnedIDs(ops, burnedBounds(in.Events))),
		ran(firstCluster(ops, in.Events, checker.Listings)), ran(firstCluster(ops, in.Events, checker.SpaceReads)),
		ran(checker.LeafMethods(ops)), ran(checker.MarginRefusals(ops, marginRefusals(in.Events))))
	switch {
	case f == nil:
		return append(out, skipped(checker.SeqAvailabilityName, noFinal+": needs the per-key lease TTL"))
	case f.SeqLeaseTTL <= 0:
		return append(out, skipped(checker.SeqAvailabilityName, "final.json has no seq_lease_ttl (saved before runs recorded it)"))
	}
	return append(out, ran(SeqAvailability(ops, in.Events, f.SeqLeaseTTL)))
}

// marginRefusals are the margin events of faults aimed outside a margin the
// design detects (nemesis.Log.MarginRefused).
func marginRefusals(evs []nemesis.Event) []checker.Refusal {
	var out []checker.Refusal
	for _, e := range evs {
		if e.Phase == nemesis.PhaseMargin && e.Refuses != "" {
			out = append(out, checker.Refusal{Margin: e.Margin, Target: e.Target, Kind: e.Refuses, From: e.At, To: e.End})
		}
	}
	return out
}

// agreedMax is each tag's highest final max_id over the members: an ID
// above it was reserved nowhere. FinalState separately fails members that
// disagree.
func agreedMax(final map[string]map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for _, m := range final {
		for t, v := range m {
			if cur, ok := out[t]; !ok || v > cur {
				out[t] = v
			}
		}
	}
	return out
}

// check fills in everything the report derives from the inputs: the
// operation counts and the verdicts.
func (r *Report) check(in Inputs) {
	r.Ops = len(in.Ops)
	r.OpsByKind = map[string][2]int{}
	r.OpsByPath = map[string][2]int{}
	r.Resolved, r.Unresolved, r.NotSent, r.OpenWrites = 0, 0, 0, 0
	for _, op := range in.Ops {
		v := r.OpsByKind[op.Kind]
		v[0]++
		if op.OK {
			v[1]++
		}
		r.OpsByKind[op.Kind] = v
		v = r.OpsByPath[op.PathOf()]
		v[0]++
		if op.OK {
			v[1]++
		}
		r.OpsByPath[op.PathOf()] = v
		switch {
		case op.Resolved:
			r.Resolved++
		case op.Unresolved:
			r.Unresolved++
		case op.Kind == history.Reserve && !op.OK && op.NotSent:
			r.NotSent++
		case op.Open():
			r.OpenWrites++
		}
	}
	r.Spaces = spaceFigures(in.Ops)
	r.Results = Check(in, r.OutDir)
	r.OK = true
	for _, v := range r.Results {
		r.OK = r.OK && (v.OK || v.Skipped != "")
	}
}

// Skipped counts the checkers that did not run.
func (r *Report) Skipped() int {
	n := 0
	for _, v := range r.Results {
		if v.Skipped != "" {
			n++
		}
	}
	return n
}

func (f *Final) validate() error {
	switch {
	case f.Snowflake.WorkerBits <= 0 || f.Snowflake.SequenceBits <= 0:
		return fmt.Errorf("snowflake layout %d/%d bits", f.Snowflake.WorkerBits, f.Snowflake.SequenceBits)
	case f.LeaseTTL <= 0:
		return fmt.Errorf("lease TTL %s", f.LeaseTTL)
	}
	return nil
}
