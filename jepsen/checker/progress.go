package checker

import (
	"fmt"
	"strings"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// ProgressName names the Progress check.
const ProgressName = "every workload made progress"

// Progress fails when some kind of operation never succeeded: the other
// checks would then pass vacuously (no ID, no duplicate), which proves
// nothing about that part of the system. The tag writes (create, update,
// delete) and the per-key sequence calls count only in histories that
// issued them (older runs, runs without per-key workers).
func Progress(ops []*history.Op) Result {
	kinds := []string{history.Reserve, history.GetTag, history.NextIDs, history.Snowflake}
	ok := map[string]int{}
	total := map[string]int{}
	for _, op := range ops {
		total[op.Kind]++
		if op.OK && !op.Resolved {
			ok[op.Kind]++
		}
	}
	for _, k := range []string{history.Create, history.Update, history.Delete, history.SeqNext, history.SeqNexts, history.SeqCurrent} {
		if total[k] > 0 {
			kinds = append(kinds, k)
		}
	}
	var idle, parts []string
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %d/%d", k, ok[k], total[k]))
		if ok[k] == 0 {
			idle = append(idle, k)
		}
	}
	if len(idle) > 0 {
		return fail(ProgressName, len(ops), "no successful %s operation (%s)", strings.Join(idle, ", "), strings.Join(parts, ", "))
	}
	return pass(ProgressName, len(ops), "successful during the run: %s", strings.Join(parts, ", "))
}
