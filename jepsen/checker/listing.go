package checker

import (
	"math"
	"sort"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// ListingsName names the Listings check.
const ListingsName = "ListTags/ListSpaces listings complete, in order, no deleted tag"

// Listings checks every answered ListTags and ListSpaces listing (all
// pages of one, history.ListTags / history.ListSpaces) against what the
// store promises: each page is a linearizable read of the names after the
// page token, in name order, and a deleted tag's tombstone is never shown
// (storage/fsm: ListTags lists live tags only; CreateTag of a deleted name
// starts its next life). So, for one listing L:
//
//   - Its names are strictly increasing: no name twice, none out of
//     order, across all its pages.
//   - A tag appears if it was known to exist before L began and nothing
//     could have deleted it since: some operation answered before L's call
//     showed the tag present (a CreateTag, UpdateTag, reservation or
//     GetTag that succeeded, or a CreateTag answered already_exists) and
//     no DeleteTag that may have taken effect (answered success, or with
//     its outcome unknown) began before L returned and may have taken
//     effect after that showing (it had not returned before the showing
//     began). This is "every tag whose CreateTag was acknowledged before
//     the listing began, and whose DeleteTag had not begun before the
//     listing ended, appears", with any answer that shows the tag present
//     in place of the CreateTag.
//   - A tag does not appear if a DeleteTag of it succeeded before L began
//     and no CreateTag that may have taken effect (answered success, or
//     unknown) began before L returned and may have taken effect after
//     that delete (re-creation: a new life).
//
// Only tags whose every write is in the history are held to the last two
// rules: the ones the store workers and the tag workers touch. The
// operator's deletes and re-creates of the allocsvrs' tags are not
// recorded (nemesis.log). For spaces, which are never deleted, a space
// appears once any answered operation on it (a per-key call, GetSpace,
// GetRouting) returned before L began.
//
// A listing with a failed page proves nothing and is skipped. A history
// that spans a store restore must be cut at the first one before this
// check (the restored cluster's tags are the backup's).
//
// Starting and stopping: a starting store answers unavailable, never a
// listing, and a stopping one's dropped calls fail: both prove nothing;
// nothing is excused.
func Listings(ops []*history.Op) Result {
	var p problems
	present, deletes, creates := tagEvidence(ops)
	spaces := spaceEvidence(ops)
	n := 0
	for _, op := range ops {
		if !op.OK || (op.Kind != history.ListTags && op.Kind != history.ListSpaces) {
			continue
		}
		n++
		for i := 1; i < len(op.Names); i++ {
			if op.Names[i] <= op.Names[i-1] {
				p.add("%s op %d (%d pages from %s): %q listed after %q (repeated or out of name order)", op.Kind, op.ID, op.Pages, op.Target, op.Names[i], op.Names[i-1])
			}
		}
		listed := map[string]bool{}
		for _, name := range op.Names {
			listed[name] = true
		}
		if op.Kind == history.ListSpaces {
			for space, ev := range spaces {
				if w, ok := ev.latestBefore(op.Call); ok && !listed[space] {
					p.add("list-spaces op %d (%s, %d pages): space %q missing, though op %d (%s) answered on it before the listing began", op.ID, op.Target, op.Pages, space, w.ID, w.Kind)
				}
			}
			continue
		}
		for tag, ev := range present {
			w, ok := ev.latestBefore(op.Call)
			if !ok || listed[tag] || mayFollow(deletes[tag], w, op) {
				continue
			}
			p.add("list-tags op %d (%s, %d pages): tag %q missing, though op %d (%s) showed it before the listing began and no delete may have taken effect since", op.ID, op.Target, op.Pages, tag, w.ID, w.Kind)
		}
		for _, name := range op.Names {
			d, ok := deletes[name].latestDoneBefore(op.Call)
			if ok && !mayFollow(creates[name], d, op) {
				p.add("list-tags op %d (%s, %d pages): tag %q listed, though op %d deleted it before the listing began and no create may have taken effect since", op.ID, op.Target, op.Pages, name, d.ID)
			}
		}
	}
	if p.n > 0 {
		return fail(ListingsName, n, "%s", p.String())
	}
	if n == 0 {
		return pass(ListingsName, 0, "no answered listing in the history")
	}
	return pass(ListingsName, n, "%d answered listings: names in order, every tag or space known present listed, no deleted tag", n)
}

// evidence is a set of operations about one name, by return time.
type evidence struct {
	ops []*history.Op // sorted by Return
	// latest[i] is the op of ops[:i+1] with the latest Call.
	latest []*history.Op
}

func newEvidence(ops []*history.Op) *evidence {
	sort.Slice(ops, func(i, j int) bool { return ops[i].Return < ops[j].Return })
	e := &evidence{ops: ops, latest: make([]*history.Op, len(ops))}
	for i, op := range ops {
		e.latest[i] = op
		if i > 0 && e.latest[i-1].Call > op.Call {
			e.latest[i] = e.latest[i-1]
		}
	}
	return e
}

// latestBefore is, among the ops that returned before t, the one called
// last: the later an op showing a name began, the fewer writes can have
// come between it and a listing.
func (e *evidence) latestBefore(t int64) (*history.Op, bool) {
	if e == nil {
		return nil, false
	}
	i := sort.Search(len(e.ops), func(i int) bool { return e.ops[i].Return >= t })
	if i == 0 {
		return nil, false
	}
	return e.latest[i-1], true
}

// latestDoneBefore is latestBefore over the ops that succeeded.
func (e *evidence) latestDoneBefore(t int64) (*history.Op, bool) {
	if e == nil {
		return nil, false
	}
	var best *history.Op
	for _, op := range e.ops {
		if op.Return >= t {
			break
		}
		if op.OK && (best == nil || op.Call > best.Call) {
			best = op
		}
	}
	return best, best != nil
}

// mayFollow reports whether one of writes may have taken effect after
// after took effect and before the listing read the name: it began
// before the listing returned, and had not returned (or never did)
// before after began.
func mayFollow(writes *evidence, after, listing *history.Op) bool {
	if writes == nil {
		return false
	}
	for _, w := range writes.ops {
		end := w.Return
		if !w.OK {
			end = math.MaxInt64 // unknown outcome: it may take effect any time after its call
		}
		if w.Call < listing.Return && end > after.Call {
			return true
		}
	}
	return false
}

// tagEvidence sorts the store operations on each tag: those that showed
// it present, and the deletes and creates that may have taken effect.
func tagEvidence(ops []*history.Op) (present, deletes, creates map[string]*evidence) {
	pres, dels, crs := map[string][]*history.Op{}, map[string][]*history.Op{}, map[string][]*history.Op{}
	for _, op := range ops {
		switch op.Kind {
		case history.Create:
			if op.Answered() {
				pres[op.Tag] = append(pres[op.Tag], op) // already_exists
				continue
			}
			if !op.NoEffect() {
				crs[op.Tag] = append(crs[op.Tag], op)
			}
			if op.OK {
				pres[op.Tag] = append(pres[op.Tag], op)
			}
		case history.Delete:
			if !op.NoEffect() && !op.Answered() {
				dels[op.Tag] = append(dels[op.Tag], op)
			}
		case history.Update, history.GetTag, history.Reserve, history.Resend:
			// A resolved reservation's Return is its re-issue's: it still
			// showed the tag within [Call, Return].
			if op.OK {
				pres[op.Tag] = append(pres[op.Tag], op)
			}
		}
	}
	wrap := func(m map[string][]*history.Op) map[string]*evidence {
		out := map[string]*evidence{}
		for k, v := range m {
			out[k] = newEvidence(v)
		}
		return out
	}
	return wrap(pres), wrap(dels), wrap(crs)
}

// spaceEvidence is, per space, the answered operations on it.
func spaceEvidence(ops []*history.Op) map[string]*evidence {
	m := map[string][]*history.Op{}
	for _, op := range ops {
		if op.OK && op.Space != "" {
			m[op.Space] = append(m[op.Space], op)
		}
	}
	out := map[string]*evidence{}
	for k, v := range m {
		out[k] = newEvidence(v)
	}
	return out
}
