package checker

import (
	"cmp"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

type linInput struct {
	kind  string
	tag   string
	size  int64 // ReserveSegment; 0: the tag's step
	start int64 // CreateTag
	step  int64 // CreateTag (0: defaultStep), UpdateTag (0: unchanged)
}

type linOutput struct {
	// unknown: the outcome of the call is not known; it may have taken
	// effect at any point after its call, and nothing it answered is
	// checked.
	unknown bool
	ok      bool
	code    string // !ok: history.CodeNotFound or history.CodeAlreadyExists

	first, last, maxID int64
	step               int64 // 0: not recorded
}

// defaultStep is the step of a tag created with step 0 (the contract's
// CreateTag default; fsm.DefaultStep).
const defaultStep = 1000

// tagState is one tag of the store. An absent tag keeps the max_id of its
// last life (the store's tombstone; 0 if it never had one) and nothing
// else. step 0 means not observed yet.
//
// ended marks the state after the end marker (endKind), past every
// operation whose outcome is known.
//
// lost marks the state after a restore or a recovery (lostKind): the
// history since the backup (or since what the survivor applied) is gone
// and every counter jumped, so the tag's presence, max_id and step are
// unknown until an answer shows them.
type tagState struct {
	exists      bool
	maxID, step int64
	ended       bool
	lost        bool
}

// endKind is the end marker Linearizable adds to each tag's history.
const endKind = "end"

// lostKind is the marker LinearizableAcross adds to each tag's history
// for each restore or recovery, spanning it.
const lostKind = "lost"

// stepIs checks an answered step against the state's; an unobserved step
// takes the answered one.
func (s tagState) stepIs(step int64) (bool, tagState) {
	switch {
	case step == 0:
		return true, s
	case s.step == 0:
		s.step = step
		return true, s
	}
	return s.step == step, s
}

// StoreModel is the store as storage/fsm/tags.go implements it, one tag
// per partition, the state being (exists, max_id, step):
//   - ReserveSegment(size) on an existing tag answers [max_id+1,
//     max_id+size] (size 0: the step) and moves max_id there; on an absent
//     tag it answers not_found.
//   - GetTag answers max_id and step, or not_found.
//   - CreateTag(start, step) on an absent tag makes it exist with max_id =
//     max(start, the tombstone's max_id), so a re-created tag continues
//     above its deleted life (guarantee 7), and the step (0: defaultStep),
//     and answers that; on an existing tag it answers already_exists.
//   - UpdateTag(step) on an existing tag sets the step unless it is 0,
//     never max_id, and answers the tag; on an absent tag not_found.
//   - DeleteTag removes an existing tag, keeping its max_id as the
//     tombstone; on an absent tag not_found.
//
// A tag write whose outcome is unknown does what it would have done at its
// linearization point; if it never took effect (or changed nothing), the
// search places it after an end marker that follows every other
// operation, where its effect is unobservable (see unknownStep).
//
// Every tag starts as created before the history with start 0 and a step
// not yet known: the first answer that shows the step fixes it (a
// history is linearizable iff it is for some initial step, and until an
// update the step is that one).
func StoreModel() porcupine.Model {
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			var tags []string
			for _, op := range h {
				t := op.Input.(linInput).tag
				if _, ok := by[t]; !ok {
					tags = append(tags, t)
				}
				by[t] = append(by[t], op)
			}
			sort.Strings(tags)
			out := make([][]porcupine.Operation, 0, len(tags))
			for _, t := range tags {
				out = append(out, by[t])
			}
			return out
		},
		Init: func() any { return tagState{exists: true} },
		Step: func(state, input, output any) (bool, any) {
			return step(state.(tagState), input.(linInput), output.(linOutput))
		},
		DescribeOperation: func(input, output any) string {
			return describe(input.(linInput), output.(linOutput))
		},
		DescribeState: func(state any) string {
			s := state.(tagState)
			if s.ended {
				return "ended"
			}
			if !s.exists {
				return "absent"
			}
			return fmt.Sprintf("max_id=%d step=%d", s.maxID, s.step)
		},
	}
}

// created is the state CreateTag(start, step) makes of the absent tag s:
// it continues above the tombstone's max_id.
func created(s tagState, in linInput) tagState {
	return tagState{exists: true, maxID: max(in.start, s.maxID), step: cmp.Or(in.step, defaultStep)}
}

// deleted is the state DeleteTag leaves of s: the tombstone.
func deleted(s tagState) tagState { return tagState{maxID: s.maxID} }

func step(s tagState, in linInput, out linOutput) (bool, tagState) {
	switch {
	case in.kind == endKind:
		return true, tagState{ended: true}
	case in.kind == lostKind:
		return true, tagState{lost: true}
	case s.lost && !s.ended:
		return adopt(s, in, out)
	case out.unknown:
		return unknownStep(s, in)
	case s.ended:
		return false, s // only the unknown writes come after the end
	case !out.ok:
		// An answered failure: the tag's presence was observed and
		// nothing changed.
		want := history.CodeNotFound
		if in.kind == history.Create {
			want = history.CodeAlreadyExists
		}
		return out.code == want && s.exists == (in.kind == history.Create), s
	case !s.exists && in.kind != history.Create:
		return false, s // it would have answered not_found
	}
	switch in.kind {
	case history.Create:
		if s.exists {
			return false, s // it would have answered already_exists
		}
		n := created(s, in)
		return out.maxID == n.maxID && (out.step == 0 || out.step == n.step), n
	case history.Update:
		if in.step > 0 {
			s.step = in.step
		}
		ok, n := s.stepIs(out.step)
		return ok && out.maxID == n.maxID, n
	case history.Delete:
		return true, deleted(s)
	case history.Reserve:
		size := in.size
		if size == 0 {
			if s.step == 0 { // unobserved: the segment shows it
				s.step = out.last - out.first + 1
			}
			size = s.step
		}
		ok, n := s.stepIs(out.step)
		n.maxID = out.last
		return ok && out.first == s.maxID+1 && out.last == s.maxID+size, n
	default: // GetTag
		ok, n := s.stepIs(out.step)
		return ok && out.maxID == n.maxID, n
	}
}

// adopt is the step from a lost state: the first answer shows the state.
// A write of unknown outcome, a failure or a deletion leaves it lost (any
// later answer is possible); an unknown write then goes after the end
// marker, which is the same as taking effect in the lost state.
func adopt(s tagState, in linInput, out linOutput) (bool, tagState) {
	switch {
	case out.unknown:
		return false, s
	case !out.ok:
		return out.code == history.CodeNotFound || out.code == history.CodeAlreadyExists, s
	}
	switch in.kind {
	case history.Delete:
		return true, s
	case history.Create:
		return out.maxID >= in.start, tagState{exists: true, maxID: out.maxID, step: cmp.Or(in.step, defaultStep)}
	case history.Reserve:
		st := out.step
		if st == 0 && in.size == 0 {
			st = out.last - out.first + 1
		}
		return out.last >= out.first, tagState{exists: true, maxID: out.last, step: st}
	case history.Update:
		return true, tagState{exists: true, maxID: out.maxID, step: cmp.Or(out.step, in.step)}
	}
	return true, tagState{exists: true, maxID: out.maxID, step: out.step}
}

// unknownStep places a tag write of unknown outcome. It either changed the
// state at some point after its call, or it changed nothing (it never
// took effect, or failed as already_exists or not_found): all of the
// latter are the same as taking place after everything else, so they are
// allowed only after the end marker. Letting them in anywhere would make
// porcupine try every subset of them at every point of the history.
func unknownStep(s tagState, in linInput) (bool, tagState) {
	if s.ended {
		return true, s
	}
	n := s
	switch in.kind {
	case history.Reserve:
		// Only a reservation resolved or answered across a restore is
		// unknown (acrossRestore, Op.OutcomeUnknown): it moved max_id by
		// its size, or did nothing.
		size := cmp.Or(in.size, s.step)
		if !s.exists || size == 0 {
			return false, s
		}
		n.maxID += size
	case history.Create:
		if !s.exists {
			n = created(s, in)
		}
	case history.Update:
		if s.exists && in.step > 0 {
			n.step = in.step
		}
	case history.Delete:
		n = deleted(s)
	}
	return n != s, n
}

func describe(in linInput, out linOutput) string {
	var call string
	switch in.kind {
	case history.Reserve:
		call = fmt.Sprintf("reserve(%s,%d)", in.tag, in.size)
	case history.Create:
		call = fmt.Sprintf("create(%s,start=%d,step=%d)", in.tag, in.start, in.step)
	case history.Update:
		call = fmt.Sprintf("update(%s,step=%d)", in.tag, in.step)
	case endKind:
		return "end of the history"
	case lostKind:
		return "restore or recovery: the state since the backup is lost"
	default:
		call = fmt.Sprintf("%s(%s)", in.kind, in.tag)
	}
	switch {
	case out.unknown:
		return call + " -> ?"
	case !out.ok:
		return call + " -> " + out.code
	case in.kind == history.Reserve:
		return fmt.Sprintf("%s -> [%d,%d] step=%d", call, out.first, out.last, out.step)
	case in.kind == history.Delete:
		return call + " -> ok"
	}
	return fmt.Sprintf("%s -> max_id=%d step=%d", call, out.maxID, out.step)
}

// storeKinds are the operations StoreModel covers.
var storeKinds = map[string]bool{history.Reserve: true, history.GetTag: true, history.Create: true, history.Update: true, history.Delete: true}

// Linearizable checks the store operations (ReserveSegment, GetTag,
// CreateTag, UpdateTag, DeleteTag) of ops with porcupine. Successful
// operations, resolved reservations and calls answered not_found or
// already_exists take part; calls that never left the client or that the
// store refused, and failed reads, are dropped (they change nothing). A tag write (create, update,
// delete) whose outcome is unknown takes part as one that may take effect
// at any point after its call. A reservation whose outcome stayed unknown
// fails the check, since it might have taken effect anywhere and its
// answer matters. On a violation the HTML visualization is written to
// outDir.
//
// Starting and stopping: a starting storesvr's 503 "starting" and a
// stopping or killed one's dropped calls are failures of unknown outcome
// like any other (the 503 proposed nothing, but the check does not rely
// on it: unknown is the wider assumption); nothing is excused.
func Linearizable(ops []*history.Op, outDir string, timeout time.Duration) Result {
	return LinearizableAcross(ops, outDir, timeout, nil)
}

// acrossRestore reports whether a resolved reservation's call came before
// the end of some lost span: its resolution, made after the run, was
// answered by a later cluster than the one it may have reserved on.
func acrossRestore(op *history.Op, lost []Span) bool {
	for _, sp := range lost {
		if op.Call < int64(sp.To) {
			return true
		}
	}
	return false
}

// earlier moves the start of the first lost span that ends after call
// back to call, on a copy.
func earlier(lost []Span, call int64) []Span {
	out := slices.Clone(lost)
	for i, sp := range out {
		if call < int64(sp.To) {
			out[i].From = min(sp.From, time.Duration(call))
			break
		}
	}
	return out
}

// LinearizableAcross is Linearizable over a history that spans restores
// or recoveries (lost: from the destruction to the restored cluster's
// readiness, on the run clock). Across one the store is not linearizable:
// what it did since the backup is gone and every counter jumped. So each
// tag gets a marker spanning each lost span, after which its state is
// unknown until an answer shows it (adopt): the history is checked
// cluster by cluster, and an operation concurrent with a restore may fall
// on either side of it.
func LinearizableAcross(ops []*history.Op, outDir string, timeout time.Duration, lost []Span) Result {
	const name = Linearizability
	var h []porcupine.Operation
	var open []int     // indexes in h of the unknown tag writes
	var resolved []int // indexes in h of the resolved reservations
	unresolved := 0
	maxClient := 0
	var end int64
	for _, op := range ops {
		maxClient = max(maxClient, op.Client)
		end = max(end, op.Return)
	}
	extra := maxClient + 1
	for _, op := range ops {
		if !storeKinds[op.Kind] || op.NoEffect() {
			continue
		}
		out := linOutput{ok: op.OK, code: op.Code, first: op.First, last: op.Last, maxID: op.MaxID, step: op.TagStep}
		switch {
		case op.OutcomeUnknown:
			out = linOutput{unknown: true}
			open = append(open, len(h))
		case op.Kind == history.Reserve && op.Unresolved:
			unresolved++
			continue
		case op.Kind == history.Reserve && op.Resolved && acrossRestore(op, lost):
			// Re-sent to a later cluster than it was sent to: the answer
			// is that cluster's, and the original may have taken effect
			// on the lost one. It is left out, and the restore's marker
			// starts no later than its call, so whatever it reserved
			// there may have been lost with the cluster. (Taking it as a
			// reservation of unknown outcome is exact but leaves
			// porcupine dozens of them per restore: it timed out.)
			lost = earlier(lost, op.Call)
			continue
		case op.OK, op.Answered():
		case op.Open():
			out = linOutput{unknown: true}
			open = append(open, len(h))
		default:
			continue
		}
		client := op.Client
		if op.Resolved { // its worker moved on: give it a lane of its own
			client = extra
			extra++
			resolved = append(resolved, len(h))
		}
		h = append(h, porcupine.Operation{
			ClientId: client,
			Input:    linInput{kind: op.Kind, tag: op.Tag, size: op.Size, start: op.Start, step: op.Step},
			Output:   out,
			Call:     op.Call,
			Return:   op.Return,
			Metadata: fmt.Sprintf("op %d on %s", op.ID, op.Target),
		})
	}
	n := len(h)
	if len(lost) == 0 {
		closeResolved(h, resolved)
	}
	var tags []string // every tag of the history, once, sorted
	for _, op := range h {
		tags = append(tags, op.Input.(linInput).tag)
	}
	slices.Sort(tags)
	tags = slices.Compact(tags)
	if len(lost) > 0 {
		for _, t := range tags {
			for _, sp := range lost {
				h = append(h, porcupine.Operation{ClientId: extra, Input: linInput{kind: lostKind, tag: t}, Output: linOutput{},
					Call: int64(sp.From), Return: max(min(int64(sp.To), end), int64(sp.From)+1)})
				extra++
			}
		}
	}
	if len(open) > 0 {
		// Each tag gets an end marker after every known operation; the
		// unknown writes stay open past it (see unknownStep).
		for _, t := range tags {
			h = append(h, porcupine.Operation{ClientId: extra, Input: linInput{kind: endKind, tag: t}, Output: linOutput{}, Call: end + 1, Return: end + 2})
		}
		for _, i := range open {
			h[i].Return = end + 3
		}
	}
	if unresolved > 0 {
		r := fail(name, n, "%d reservation(s) with unknown outcome could not be resolved; verdict Unknown", unresolved)
		r.Undecided = true
		return r
	}
	if n == 0 {
		return fail(name, 0, "no store operations succeeded")
	}
	model := StoreModel()
	res, info := porcupine.CheckOperationsVerbose(model, h, timeout)
	switch res {
	case porcupine.Ok:
		return pass(name, n, "%d operations linearizable (%d tag writes of unknown outcome, %d restores)", n, len(open), len(lost))
	case porcupine.Unknown:
		r := fail(name, n, "porcupine timed out after %s: verdict Unknown", timeout)
		r.Undecided = true
		return r
	}
	r := fail(name, n, "history of %d operations is NOT linearizable", n)
	if outDir != "" {
		path := filepath.Join(outDir, "linearizability.html")
		if err := porcupine.VisualizePath(model, info, path); err == nil {
			r.Artifact = path
		} else {
			r.Detail += fmt.Sprintf(" (visualization: %v)", err)
		}
	}
	return r
}

// closeResolved ends each resolved reservation's window at the first
// return of an operation on its tag that saw max_id at or above the
// segment it was answered (a GetTag, or a reservation answered in time).
// Its answer came only after the run, so its window would otherwise stay
// open to the end, over every later operation: thousands of them (3,141
// in one clock run) left porcupine undecided after its 2 minutes. The
// bound is exact, not a guess: max_id only grows (a re-created tag
// continues above its tombstone), so an operation that saw max_id >= last
// took effect after the reservation that moved max_id to last, and it took
// effect before it returned. A bound that falls before the reservation's
// call would be a violation by itself: the window is left as it is and
// porcupine finds it. Only for a history without restores, where max_id
// jumps (LinearizableAcross leaves lost spans alone).
func closeResolved(h []porcupine.Operation, resolved []int) {
	if len(resolved) == 0 {
		return
	}
	type seen struct{ max, ret int64 }
	by := map[string][]seen{}
	for _, op := range h {
		in, out := op.Input.(linInput), op.Output.(linOutput)
		if !out.ok || out.unknown {
			continue
		}
		switch in.kind {
		case history.GetTag:
			by[in.tag] = append(by[in.tag], seen{out.maxID, op.Return})
		case history.Reserve:
			by[in.tag] = append(by[in.tag], seen{out.last, op.Return})
		}
	}
	for tag, ss := range by {
		// By max_id, each with the earliest return among those at or
		// above it.
		slices.SortFunc(ss, func(a, b seen) int { return cmp.Compare(a.max, b.max) })
		for i := len(ss) - 2; i >= 0; i-- {
			ss[i].ret = min(ss[i].ret, ss[i+1].ret)
		}
		by[tag] = ss
	}
	for _, i := range resolved {
		in, out := h[i].Input.(linInput), h[i].Output.(linOutput)
		if in.kind != history.Reserve || !out.ok || out.unknown {
			continue
		}
		// The first entry with max >= out.last (resolved reservations
		// are among them; their late returns never lower the minimum).
		ss := by[in.tag]
		k, _ := slices.BinarySearchFunc(ss, out.last, func(s seen, target int64) int { return cmp.Compare(s.max, target) })
		if k == len(ss) {
			continue
		}
		if ret := ss[k].ret; ret > h[i].Call && ret < h[i].Return {
			h[i].Return = ret
		}
	}
}
