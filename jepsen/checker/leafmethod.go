package checker

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// LeafMethodsName names the LeafMethods check.
const LeafMethodsName = "Leaf routes refuse methods other than GET"

// startingBody is what a process that is still starting answers to every
// call but /healthz (internal/serve: the server before its handler is
// set, and the starting handler): 503 with this text.
const startingBody = "starting"

// LeafMethods checks the HEAD and POST calls of Leaf routes
// (history.LeafMethod): only GET hands out IDs (guarantee 7), so every
// one answered must be 405 with GET among the methods its Allow header
// names, and carry no ID. A call without an answer (a transport error
// under the faults) took nothing anyone saw and is only counted.
//
// Starting and stopping. A process that is still starting answers every
// call but /healthz with 503 "starting", the wrong method included: it
// has no Leaf route yet, so it cannot know which methods one allows. That
// is the documented behaviour, and the one answer excused: a 503 whose
// body is exactly "starting", with no ID, from a lifetime that was still
// starting as far as the history shows. That is, the answer came from
// the lifetime the call was sent to (a restarted one, or a new process
// such as a twin; a lifetime is a name, a start count and a pid), and no
// call to that lifetime had returned an answer
// it served (an OK call of any kind) before this one was sent: a
// lifetime starts once and serves from then on, so a "starting" after it
// served is a fault. A stopping process (SIGTERM) answers what it still
// answers with its Leaf routes (405), and refuses or drops the rest (no
// answer, counted): nothing of it is excused.
//
// The current allocsvr answers Allow: GET exactly (alloc's
// TestLeafOnlyGetHandsOutIDs holds it to that); the base release of the
// upgrade scenario answers a POST with "GET, HEAD" (net/http's own 405),
// which hands out nothing either, so this check accepts it.
func LeafMethods(ops []*history.Op) Result {
	served := firstServed(ops)
	var p problems
	n, unanswered, starting := 0, 0, 0
	for _, op := range ops {
		if op.Kind != history.LeafMethod {
			continue
		}
		n++
		switch {
		case op.HTTPStatus == 0:
			unanswered++
		case LeafRefused(op.HTTPStatus, op.Allow) && len(op.IDs) == 0:
		case LeafStarting(op.HTTPStatus, leafBody(op)) && len(op.IDs) == 0 && stillStarting(op, served):
			starting++
		default:
			p.add("op %d: %s %s on %s life %d (%s) answered %d %q, Allow %q, IDs %v; want 405 allowing GET, no ID (or 503 \"starting\" before the lifetime served)",
				op.ID, op.Method, op.URL, op.Target, op.Life, op.PathOf(), op.HTTPStatus, leafBody(op), op.Allow, op.IDs)
		}
	}
	if p.n > 0 {
		return fail(LeafMethodsName, n, "%s", p.String())
	}
	if n == 0 {
		return pass(LeafMethodsName, 0, "no HEAD or POST of a Leaf route in the history")
	}
	return pass(LeafMethodsName, n, "%d HEAD/POST calls: %d answered 405 allowing GET, no ID, %d answered 503 \"starting\" by a lifetime that had not served yet, %d unanswered",
		n, n-unanswered-starting, starting, unanswered)
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

// LeafStarting reports whether an answer is a starting process's: 503
// with the body (trimmed) "starting".
func LeafStarting(status int, body string) bool {
	return status == http.StatusServiceUnavailable && body == startingBody
}

// leafBody is op's answer text: Body, or for a history from before Body
// was recorded, the body the harness quoted in the call's error.
func leafBody(op *history.Op) string {
	if op.Body != "" {
		return op.Body
	}
	const marker = "body "
	i := strings.LastIndex(op.Err, marker)
	if i < 0 {
		return ""
	}
	q, err := strconv.QuotedPrefix(op.Err[i+len(marker):])
	if err != nil {
		return ""
	}
	s, _ := strconv.Unquote(q)
	return s
}

// lifetime is one process lifetime of a target. The pid is part of it:
// a fresh process under a reused name (the takeover twins) starts its
// count of lifetimes again.
type lifetime struct {
	target string
	life   int
	pid    int
}

// firstServed is, per lifetime, the earliest return of a call that
// lifetime served (OK, answered by the lifetime it was sent to).
func firstServed(ops []*history.Op) map[lifetime]int64 {
	out := map[lifetime]int64{}
	for _, op := range ops {
		if !op.OK || op.Life != op.LifeReturn || op.Life == 0 {
			continue
		}
		k := lifetime{op.Target, op.Life, op.Pid}
		if t, ok := out[k]; !ok || op.Return < t {
			out[k] = op.Return
		}
	}
	return out
}

// stillStarting reports whether the history leaves op's lifetime
// possibly starting when op was answered: the answer came from the
// lifetime op was sent to, and no call that lifetime served had returned
// before op was sent.
func stillStarting(op *history.Op, served map[lifetime]int64) bool {
	if op.Life == 0 || op.Life != op.LifeReturn {
		return false
	}
	t, ok := served[lifetime{op.Target, op.Life, op.Pid}]
	return !ok || t >= op.Call
}
