package checker

import (
	"net/http"
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// listTags is an answered listing over [call, ret] that listed names.
func listTags(call, ret int64, names ...string) *history.Op {
	return &history.Op{ID: 100 + call, Kind: history.ListTags, Target: "s1", Call: call, Return: ret, OK: true, Pages: len(names), Names: names}
}

func onTag(op *history.Op, tag string) *history.Op {
	op.Tag = tag
	return op
}

func TestListings(t *testing.T) {
	for _, c := range []struct {
		name string
		ops  []*history.Op
		ok   bool
		want string // in the detail of a failure
	}{
		{name: "every known tag listed", ok: true, ops: []*history.Op{
			create(0, 0, 10, 1, 1), read(1, 5, 12, 1, 1), listTags(20, 30, "a", "t")}},
		{name: "created tag missing", want: `tag "t" missing`, ops: []*history.Op{
			create(0, 0, 10, 1, 1), listTags(20, 30, "a")}},
		{name: "read tag missing", want: `tag "t" missing`, ops: []*history.Op{
			read(1, 5, 12, 1, 1), listTags(20, 30)}},
		{name: "already_exists shows it present", want: `tag "t" missing`, ops: []*history.Op{
			failed(create(0, 0, 10, 1, 1), history.CodeAlreadyExists), listTags(20, 30)}},
		{name: "missing while a delete began before the listing ended", ok: true, ops: []*history.Op{
			create(0, 0, 10, 1, 1), del(1, 25, 40), listTags(20, 30)}},
		{name: "missing after a delete of unknown outcome", ok: true, ops: []*history.Op{
			unknownOp(del(1, 0, 3)), create(0, 5, 10, 1, 1), listTags(20, 30)}},
		{name: "a delete answered before the create began does not excuse", want: `tag "t" missing`, ops: []*history.Op{
			del(1, 0, 3), create(0, 5, 10, 1, 1), listTags(20, 30)}},
		{name: "a delete refused before proposing does not excuse", want: `tag "t" missing`, ops: []*history.Op{
			create(0, 0, 10, 1, 1), func() *history.Op { op := failed(del(1, 12, 14), "unavailable"); op.Refused = true; return op }(), listTags(20, 30)}},
		{name: "a tag listed twice", want: "repeated or out of name order", ops: []*history.Op{
			listTags(20, 30, "a", "b", "b")}},
		{name: "out of order across pages", want: "repeated or out of name order", ops: []*history.Op{
			listTags(20, 30, "b", "a")}},
		{name: "deleted tag listed", want: `tag "t" listed`, ops: []*history.Op{
			create(0, 0, 10, 1, 1), del(1, 11, 15), listTags(20, 30, "t")}},
		{name: "deleted tag listed while re-created", ok: true, ops: []*history.Op{
			create(0, 0, 10, 1, 1), del(1, 11, 15), create(0, 25, 35, 2, 1), listTags(20, 30, "t")}},
		{name: "deleted tag listed after a re-create of unknown outcome", ok: true, ops: []*history.Op{
			create(0, 0, 10, 1, 1), unknownOp(create(0, 12, 13, 2, 1)), del(1, 11, 15), listTags(20, 30, "t")}},
		{name: "a re-create answered before the delete began does not excuse", want: `tag "t" listed`, ops: []*history.Op{
			create(0, 0, 10, 1, 1), del(1, 11, 15), failed(create(0, 1, 2, 2, 1), history.CodeAlreadyExists), listTags(20, 30, "t")}},
		{name: "a failed listing proves nothing", ok: true, ops: []*history.Op{
			create(0, 0, 10, 1, 1), failed(listTags(20, 30, "b", "a"), "unavailable")}},
		{name: "a reservation on another tag says nothing of t", ok: true, ops: []*history.Op{
			onTag(reserveStep(0, 0, 10, 1, 5, 5), "u"), listTags(20, 30, "u")}},
		{name: "space missing", want: `space "seq" missing`, ops: []*history.Op{
			{ID: 1, Kind: history.SeqNext, Space: "seq", Keys: []uint64{1}, Seqs: []int64{1}, OK: true, Call: 0, Return: 5},
			{ID: 2, Kind: history.ListSpaces, Call: 10, Return: 20, OK: true, Pages: 1}}},
		{name: "space listed", ok: true, ops: []*history.Op{
			{ID: 1, Kind: history.SeqNext, Space: "seq", Keys: []uint64{1}, Seqs: []int64{1}, OK: true, Call: 0, Return: 5},
			{ID: 2, Kind: history.ListSpaces, Call: 4, Return: 20, OK: true, Pages: 1},
			{ID: 3, Kind: history.ListSpaces, Call: 10, Return: 20, OK: true, Pages: 1, Names: []string{"seq"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Listings(c.ops)
			if r.OK != c.ok || !c.ok && !strings.Contains(r.Detail, c.want) {
				t.Fatalf("OK %v, want %v (%q): %s", r.OK, c.ok, c.want, r.Detail)
			}
		})
	}
}

func routing(id, call, ret int64, version uint64, runs ...history.RoutedRun) *history.Op {
	return &history.Op{ID: id, Kind: history.GetRouting, Target: "s1", Space: "seq", Call: call, Return: ret, OK: true,
		Routing: &history.Routing{Version: version, KeyCount: 1000, SectionSize: 100, Runs: runs}}
}

func spaceInfo(id, call, ret int64, step int64) *history.Op {
	return &history.Op{ID: id, Kind: history.GetSpace, Target: "s2", Space: "seq", Call: call, Return: ret, OK: true,
		SpaceInfo: &history.SpaceInfo{KeyCount: 1000, SectionSize: 100, SectionCount: 10, Step: step, CreateTimeMs: 7}}
}

var (
	whole = []history.RoutedRun{{First: 0, Last: 4, Owner: "a1"}, {First: 5, Last: 9, Owner: "a2"}}
	moved = []history.RoutedRun{{First: 0, Last: 9, Owner: "a1"}}
)

func TestSpaceReads(t *testing.T) {
	nextAt := func(id, call, ret int64, version uint64) *history.Op {
		return &history.Op{ID: id, Kind: history.SeqNext, Target: "a1", Space: "seq", Keys: []uint64{1}, Seqs: []int64{id}, OK: true, Call: call, Return: ret, RoutingVersion: version}
	}
	for _, c := range []struct {
		name string
		ops  []*history.Op
		ok   bool
		want string
	}{
		{name: "versions rise, fields agree", ok: true, ops: []*history.Op{
			routing(1, 0, 10, 3, whole...), spaceInfo(2, 5, 15, 50), routing(3, 20, 30, 4, moved...), nextAt(4, 31, 32, 4), routing(5, 40, 50, 4, moved...)}},
		{name: "concurrent reads may see either version", ok: true, ops: []*history.Op{
			routing(1, 0, 10, 4, moved...), routing(2, 5, 15, 3, whole...)}},
		{name: "version goes back in real time", want: "below 4", ops: []*history.Op{
			routing(1, 0, 10, 4, moved...), routing(2, 20, 30, 3, whole...)}},
		{name: "below a per-key answer's version", want: "below 5", ops: []*history.Op{
			nextAt(1, 0, 10, 5), routing(2, 20, 30, 4, moved...)}},
		{name: "same version, other runs", want: "different runs", ops: []*history.Op{
			routing(1, 0, 10, 4, moved...), routing(2, 20, 30, 4, whole...)}},
		{name: "runs leave a section out", want: "do not cover all 10 sections", ops: []*history.Op{
			routing(1, 0, 10, 4, history.RoutedRun{First: 0, Last: 8})}},
		{name: "runs overlap", want: "in order", ops: []*history.Op{
			routing(1, 0, 10, 4, history.RoutedRun{First: 0, Last: 5}, history.RoutedRun{First: 5, Last: 9})}},
		{name: "space fields change", want: "get-space op 2", ops: []*history.Op{
			spaceInfo(1, 0, 10, 50), spaceInfo(2, 20, 30, 60)}},
		{name: "not_found after the space answered", want: "not_found", ops: []*history.Op{
			nextAt(1, 0, 10, 5), failed(&history.Op{ID: 2, Kind: history.GetSpace, Space: "seq", Call: 20, Return: 30}, history.CodeNotFound)}},
		{name: "not_found in a run without the space", ok: true, ops: []*history.Op{
			failed(&history.Op{ID: 2, Kind: history.GetRouting, Space: "seq", Call: 20, Return: 30}, history.CodeNotFound)}},
		{name: "routing disagrees with the space", want: "key_count 1000 section_size 100, get-routing", ops: []*history.Op{
			spaceInfo(1, 0, 10, 50), func() *history.Op {
				op := routing(2, 20, 30, 4, history.RoutedRun{First: 0, Last: 4})
				op.Routing.SectionSize = 200
				return op
			}()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := SpaceReads(c.ops)
			if r.OK != c.ok || !c.ok && !strings.Contains(r.Detail, c.want) {
				t.Fatalf("OK %v, want %v (%q): %s", r.OK, c.ok, c.want, r.Detail)
			}
		})
	}
}

func TestLeafMethods(t *testing.T) {
	leaf := func(status int, allow string, ids ...int64) *history.Op {
		return &history.Op{ID: 1, Kind: history.LeafMethod, Target: "a1", Method: http.MethodHead, URL: "/api/segment/get/ids-0", HTTPStatus: status, Allow: allow, IDs: ids}
	}
	for _, c := range []struct {
		name string
		op   *history.Op
		ok   bool
	}{
		{"405 allowing GET", leaf(405, "GET"), true},
		{"no answer", leaf(0, ""), true},
		{"200", leaf(200, ""), false},
		{"405 with an ID", leaf(405, "GET", 7), false},
		{"405 allowing HEAD too (the base release's answer to POST)", leaf(405, "GET, HEAD"), true},
		{"405 not allowing GET", leaf(405, "HEAD"), false},
		{"405 allowing GETX", leaf(405, "GETX"), false},
		{"405 without Allow", leaf(405, ""), false},
		{"503", leaf(503, ""), false},
	} {
		if r := LeafMethods([]*history.Op{leaf(405, "GET"), c.op}); r.OK != c.ok {
			t.Errorf("%s: OK %v, want %v: %s", c.name, r.OK, c.ok, r.Detail)
		}
	}
}

// The store reads and the Leaf HEAD/POST calls count for Progress: an
// answered not_found read counts, a history whose every listing failed
// does not.
func TestProgressReads(t *testing.T) {
	base := []*history.Op{res(1, 0, 0, 1, 1, 2), get(2, 0, 2, 3, 2),
		ids(3, "a1", 1, history.NextIDs, 0, 1, 1), ids(4, "a1", 1, history.Snowflake, 0, 1, 5)}
	nf := failed(&history.Op{ID: 5, Kind: history.GetSpace, Space: "seq"}, history.CodeNotFound)
	if r := Progress(append(append([]*history.Op{}, base...), nf)); !r.OK {
		t.Fatalf("a not_found GetSpace not counted: %s", r.Detail)
	}
	bad := failed(listTags(5, 6), "unavailable")
	if r := Progress(append(append([]*history.Op{}, base...), bad)); r.OK || !strings.Contains(r.Detail, history.ListTags) {
		t.Fatalf("no listing answered, accepted: %s", r.Detail)
	}
}
