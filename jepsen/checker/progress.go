package checker

import (
	"fmt"
	"slices"
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
//
// Each serving path (history.Paths) that carried calls must also have
// had one succeed.
//
// The store reads (history.Reads) and the Leaf HEAD/POST calls count the
// same way, in histories that have them; a store read answered not_found
// (GetSpace or GetRouting in a run without a space) counts, as an answer
// about the committed state that checker.SpaceReads judges.
//
// A tag write also counts when the store answered it with not_found or
// already_exists: such an answer is about the committed state, and the
// linearizability check must explain it, so the kind is not checked
// vacuously. (A run whose store keeps losing its leader can see every
// CreateTag end "may have committed" or already_exists, the earlier
// "may have committed" one having taken effect: the clock scenario with
// seed 2426 did, twice.)
//
// Starting and stopping: a starting process's 503 "starting" and a
// stopping one's dropped calls are failures, which this check neither
// needs nor forbids (it wants one success per kind and path over the
// run); nothing is excused.
func Progress(ops []*history.Op) Result {
	kinds := []string{history.Reserve, history.GetTag, history.NextIDs, history.Snowflake}
	ok := map[string]int{}
	total := map[string]int{}
	for _, op := range ops {
		total[op.Kind]++
		write := op.Kind == history.Create || op.Kind == history.Update || op.Kind == history.Delete
		if op.OK && !op.Resolved || (write || slices.Contains(history.Reads, op.Kind)) && op.Answered() {
			ok[op.Kind]++
		}
	}
	optional := []string{history.Create, history.Update, history.Delete, history.SeqNext, history.SeqNexts, history.SeqCurrent, history.Decode, history.Status}
	for _, k := range append(append(optional, history.Reads...), history.LeafMethod) {
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
	// Every serving path that carried calls must have had one answered:
	// a path whose every call failed would pass the other checks on its
	// share of the load vacuously.
	pathOK, pathTotal := map[string]int{}, map[string]int{}
	for _, op := range ops {
		if op.Path == "" {
			continue // a history from before paths
		}
		pathTotal[op.Path]++
		if op.OK && !op.Resolved {
			pathOK[op.Path]++
		}
	}
	for _, p := range history.Paths {
		if pathTotal[p] == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("path %s %d/%d", p, pathOK[p], pathTotal[p]))
		if pathOK[p] == 0 {
			idle = append(idle, "path "+p)
		}
	}
	if len(idle) > 0 {
		return fail(ProgressName, len(ops), "no successful (or, for tag writes, answered) %s operation (%s)", strings.Join(idle, ", "), strings.Join(parts, ", "))
	}
	return pass(ProgressName, len(ops), "successful (tag writes: or answered) during the run: %s", strings.Join(parts, ", "))
}
