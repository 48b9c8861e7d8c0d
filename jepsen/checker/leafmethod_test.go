package checker

import (
	"net/http"
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// leafCall is a POST of a Leaf route on a1's lifetime life over
// [call, ret], answered status with body.
func leafCall(id int64, life int, call, ret int64, status int, body string) *history.Op {
	return &history.Op{ID: id, Kind: history.LeafMethod, Target: "a1", Life: life, LifeReturn: life, Call: call, Return: ret,
		Method: http.MethodPost, URL: "/api/segment/get/ids-0", HTTPStatus: status, Body: body}
}

// A starting process answers 503 "starting" to every call but /healthz;
// LeafMethods excuses exactly that, from a lifetime that had not served.
func TestLeafMethodsStarting(t *testing.T) {
	// a1's first lifetime served from 0 to 50; its second began after.
	life1 := ids(1, "a1", 1, history.NextIDs, 0, 10, 1)
	life1b := ids(2, "a1", 1, history.NextIDs, 40, 50, 2)
	for _, c := range []struct {
		name string
		ops  []*history.Op
		ok   bool
		want string
	}{
		{name: "503 starting right after a restart", ok: true, ops: []*history.Op{
			life1, life1b, leafCall(3, 2, 60, 61, 503, "starting")}},
		{name: "503 starting while a served call of the new lifetime is in flight", ok: true, ops: []*history.Op{
			life1, leafCall(3, 2, 60, 65, 503, "starting"), ids(4, "a1", 2, history.NextIDs, 55, 70, 9)}},
		{name: "503 starting from a lifetime that never served (a twin)", ok: true, ops: []*history.Op{
			leafCall(3, 1, 60, 61, 503, "starting")}},
		{name: "503 starting from a second twin under a reused name", ok: true, ops: []*history.Op{
			func() *history.Op { op := ids(4, "a1", 1, history.NextIDs, 0, 10, 1); op.Pid = 7; return op }(),
			func() *history.Op { op := leafCall(3, 1, 60, 61, 503, "starting"); op.Pid = 8; return op }()}},
		{name: "503 starting with no restart nearby", want: `answered 503 "starting"`, ops: []*history.Op{
			life1, life1b, leafCall(3, 1, 60, 61, 503, "starting")}},
		{name: "503 starting after the new lifetime served", want: `answered 503 "starting"`, ops: []*history.Op{
			life1, ids(4, "a1", 2, history.NextIDs, 55, 58, 9), leafCall(3, 2, 60, 61, 503, "starting")}},
		{name: "503 starting from a lifetime other than the one called", want: `answered 503 "starting"`, ops: []*history.Op{
			life1, func() *history.Op { op := leafCall(3, 1, 60, 61, 503, "starting"); op.LifeReturn = 2; return op }()}},
		{name: "503 with another body after a restart", want: `answered 503 "overloaded"`, ops: []*history.Op{
			life1, leafCall(3, 2, 60, 61, 503, "overloaded")}},
		{name: "503 starting with an ID", want: "IDs [7]", ops: []*history.Op{
			life1, func() *history.Op { op := leafCall(3, 2, 60, 61, 503, "starting"); op.IDs = []int64{7}; return op }()}},
		{name: "200 to POST", want: "answered 200", ops: []*history.Op{
			life1, leafCall(3, 2, 60, 61, 200, "")}},
		{name: "200 to POST right after a restart, body starting", want: "answered 200", ops: []*history.Op{
			life1, leafCall(3, 2, 60, 61, 200, "starting")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := LeafMethods(c.ops)
			if r.OK != c.ok || !c.ok && !strings.Contains(r.Detail, c.want) {
				t.Fatalf("OK %v, want %v (%q): %s", r.OK, c.ok, c.want, r.Detail)
			}
		})
	}
}

// A history saved before Body was recorded has the body only in the
// harness's error text.
func TestLeafBodyFromErr(t *testing.T) {
	op := &history.Op{Err: `internal: POST /api/segment/get/ids-0: 503, Allow "", body "starting"; want 405 allowing GET`}
	if got := leafBody(op); got != "starting" {
		t.Fatalf("body %q, want starting", got)
	}
	if got := leafBody(&history.Op{Err: "unavailable: dial tcp"}); got != "" {
		t.Fatalf("body %q from an error without one", got)
	}
}
