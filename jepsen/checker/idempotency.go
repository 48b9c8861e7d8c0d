package checker

import (
	"fmt"
	"sort"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// Idempotent checks the idempotency contract of ReserveSegment directly:
// every success for one request_id, the first call's (answered at once or
// learned by the harness's resolve) and every re-send's (history.Resend),
// names exactly the same segment, wherever the re-send went and whatever
// happened in between (leader changes, snapshots, restarts). A re-send
// answered with a definite error (not_found, invalid_argument) for a
// request_id that had succeeded is a violation too: the store forgot or
// misfiled the reservation. Checked counts the request_ids re-sent and
// answered at least once besides their first success.
//
// Starting and stopping: a starting storesvr answers unavailable (503
// "starting"), never a definite not_found or invalid_argument, so its
// answers are not judged; a stopping member's last answers are judged
// like any other; nothing is excused.
func Idempotent(ops []*history.Op) Result {
	type group struct {
		first  *history.Op // earliest-returning success
		all    []*history.Op
		resent bool
	}
	groups := map[string]*group{}
	for _, op := range ops {
		if op.RequestID == "" || (op.Kind != history.Reserve && op.Kind != history.Resend) {
			continue
		}
		g := groups[op.RequestID]
		if g == nil {
			g = &group{}
			groups[op.RequestID] = g
		}
		g.all = append(g.all, op)
		if op.Kind == history.Resend {
			g.resent = true
		}
		if op.OK && (g.first == nil || op.Return < g.first.Return) {
			g.first = op
		}
	}
	ids := make([]string, 0, len(groups))
	for id, g := range groups {
		if g.resent {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	var p problems
	checked, across := 0, map[string]int{}
	for _, id := range ids {
		g := groups[id]
		if g.first == nil {
			continue // never answered: nothing to compare with
		}
		compared := false
		for _, op := range g.all {
			if op == g.first {
				continue
			}
			switch {
			case op.OK && (op.First != g.first.First || op.Last != g.first.Last):
				p.add("request_id %s on tag %s: %s #%d (%s, via %s) answered [%d, %d], its first success #%d answered [%d, %d]",
					id, op.Tag, op.Kind, op.ID, acrossWord(op), op.Target, op.First, op.Last, g.first.ID, g.first.First, g.first.Last)
			case !op.OK && op.Kind == history.Resend && (op.Code == history.CodeNotFound || op.Code == "invalid_argument"):
				p.add("request_id %s on tag %s: re-send #%d (%s, via %s) answered %s, its first success #%d answered [%d, %d]",
					id, op.Tag, op.ID, acrossWord(op), op.Target, op.Code, g.first.ID, g.first.First, g.first.Last)
			case !op.OK:
				continue
			}
			compared = true
			if op.Kind == history.Resend {
				across[acrossWord(op)]++
			}
		}
		if compared {
			checked++
		}
	}
	if p.n > 0 {
		return fail(IdempotentName, checked, "%s", p.String())
	}
	if len(ids) == 0 {
		// A history with no re-send at all (an older run, or one without
		// store workers): nothing to check. A run that re-sent but never
		// got an answer is undecided below, and the progress checker
		// fails a kind of call that never succeeded.
		return pass(IdempotentName, 0, "no request_id was re-sent in this history")
	}
	if checked == 0 {
		return Result{Name: IdempotentName, Undecided: true, Detail: fmt.Sprintf("no re-sent request_id was answered (%d re-sent)", len(ids))}
	}
	return pass(IdempotentName, checked, "%d re-sent request_ids answered their first segment (re-sends answered: %s)", checked, fmtCounts(across))
}

func acrossWord(op *history.Op) string {
	if op.Kind != history.Resend {
		return "first call"
	}
	if op.Across == "" {
		return "at once"
	}
	return op.Across
}

func fmtCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", k, m[k])
	}
	return s
}
