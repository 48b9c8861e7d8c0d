package checker

import (
	"net/http"
	"strings"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// LeafMethodsName names the LeafMethods check.
const LeafMethodsName = "Leaf routes refuse methods other than GET"

// LeafMethods checks the HEAD and POST calls of Leaf routes
// (history.LeafMethod): only GET hands out IDs (guarantee 7), so every
// one answered must be 405 with GET among the methods its Allow header
// names, and carry no ID. A call without an answer (a transport error
// under the faults) took nothing anyone saw and is only counted.
//
// The current allocsvr answers Allow: GET exactly (alloc's
// TestLeafOnlyGetHandsOutIDs holds it to that); the base release of the
// upgrade scenario answers a POST with "GET, HEAD" (net/http's own 405),
// which hands out nothing either, so this check accepts it.
func LeafMethods(ops []*history.Op) Result {
	var p problems
	n, unanswered := 0, 0
	for _, op := range ops {
		if op.Kind != history.LeafMethod {
			continue
		}
		n++
		switch {
		case op.HTTPStatus == 0:
			unanswered++
		case !LeafRefused(op.HTTPStatus, op.Allow) || len(op.IDs) > 0:
			p.add("op %d: %s %s on %s (%s) answered %d, Allow %q, IDs %v; want 405 allowing GET, no ID", op.ID, op.Method, op.URL, op.Target, op.PathOf(), op.HTTPStatus, op.Allow, op.IDs)
		}
	}
	if p.n > 0 {
		return fail(LeafMethodsName, n, "%s", p.String())
	}
	if n == 0 {
		return pass(LeafMethodsName, 0, "no HEAD or POST of a Leaf route in the history")
	}
	return pass(LeafMethodsName, n, "%d HEAD/POST calls: %d answered 405 allowing GET, no ID, %d unanswered", n, n-unanswered, unanswered)
}

// LeafRefused reports whether a Leaf route's answer to a method other
// than GET refused it: 405 with GET among the methods allow names.
func LeafRefused(status int, allow string) bool {
	if status != http.StatusMethodNotAllowed {
		return false
	}
	for m := range strings.SplitSeq(allow, ",") {
		if strings.TrimSpace(m) == http.MethodGet {
			return true
		}
	}
	return false
}
