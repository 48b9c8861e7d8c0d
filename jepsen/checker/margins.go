package checker

import (
	"time"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// MarginRefusalsName names the MarginRefusals check.
const MarginRefusalsName = "faults beyond a detected margin refused"

// Refusal is what an aimed fault outside a margin the design detects
// demands: Target answers no call of Kind over [From, To] on the run
// clock (a twin whose clock is beyond --snowflake-max-clock-offset, for
// example, must not issue snowflake IDs).
type Refusal struct {
	Margin, Target, Kind string
	From, To             time.Duration
}

// MarginRefusals checks that every refusal held: no successful call of
// its kind answered by its target was called inside its window.
//
// Starting and stopping: the window is the fault's, from before the
// target started to before it was stopped, and nothing is excused:
// whatever the process answers while starting or stopping it must
// refuse too, since the fault lasts its whole life.
func MarginRefusals(ops []*history.Op, refusals []Refusal) Result {
	var p problems
	n := 0
	for _, rf := range refusals {
		for _, op := range ops {
			if op.Target != rf.Target || op.Kind != rf.Kind {
				continue
			}
			call := time.Duration(op.Call)
			if call < rf.From || call > rf.To {
				continue
			}
			n++
			if op.OK {
				p.add("%s outside %s: op %d (%s) on %s called at %.3fs was answered, but the fault from %.3fs to %.3fs must be refused",
					rf.Margin, rf.Margin, op.ID, op.Kind, op.Target, call.Seconds(), rf.From.Seconds(), rf.To.Seconds())
			}
		}
	}
	if p.n > 0 {
		return fail(MarginRefusalsName, n, "%s", p.String())
	}
	if len(refusals) == 0 {
		return pass(MarginRefusalsName, 0, "no fault aimed outside a detected margin")
	}
	return pass(MarginRefusalsName, n, "%d fault(s) outside a detected margin; their %d calls were all refused", len(refusals), n)
}
