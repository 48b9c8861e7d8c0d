package fsm

import (
	"errors"
	"math"
	"testing"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

func TestFSMCreateSpace(t *testing.T) {
	f := New(nil)
	for _, c := range []struct {
		name             string
		cmd              *seqsvrv1.Command
		wantErr          error
		keys, size, secs uint64
		step             int64
	}{
		{"defaults", spaceCmd("d", 0, 0, 0), nil, spec.DefaultKeyCount, spec.DefaultSectionSize, 42950, spec.DefaultSeqStep},
		{"explicit", spaceCmd("e", 10, 3, 7), nil, 10, 3, 4, 7},
		{"one key", spaceCmd("one", 1, 1, 1), nil, 1, 1, 1, 1},
		{"largest", spaceCmd("big", spec.MaxSectionCount*spec.MaxSectionSize, spec.MaxSectionSize, spec.MaxSeqStep), nil,
			spec.MaxSectionCount * spec.MaxSectionSize, spec.MaxSectionSize, spec.MaxSectionCount, spec.MaxSeqStep},
		{"exists", spaceCmd("e", 0, 0, 0), errs.AlreadyExists, 0, 0, 0, 0},
		{"section too big", spaceCmd("x", 0, spec.MaxSectionSize+1, 0), errs.InvalidArgument, 0, 0, 0, 0},
		{"too many sections", spaceCmd("x", spec.MaxSectionCount+1, 1, 0), errs.InvalidArgument, 0, 0, 0, 0},
		{"negative step", spaceCmd("x", 0, 0, -1), errs.InvalidArgument, 0, 0, 0, 0},
		{"step too big", spaceCmd("x", 0, 0, spec.MaxSeqStep+1), errs.InvalidArgument, 0, 0, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := applyAt(t, f, 5000, c.cmd)
			if !errors.Is(r.Err, c.wantErr) || (c.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("err %v, want %v", r.Err, c.wantErr)
			}
			if c.wantErr != nil {
				return
			}
			sp := r.Space
			if sp.GetKeyCount() != c.keys || sp.GetSectionSize() != c.size || sp.GetSectionCount() != c.secs ||
				sp.GetStep() != c.step || sp.GetCreateTime().AsTime().UnixMilli() != 5000 {
				t.Fatalf("space %v", sp)
			}
			// No allocsvr heartbeats: one unowned run, version 1.
			wantRuns(t, f, sp.GetSpace(), run{first: 0, last: c.secs - 1})
			if _, v := routing(f, sp.GetSpace()); v != 1 {
				t.Fatalf("routing_version %d, want 1", v)
			}
		})
	}
	if _, v := routing(f, "x"); v != 0 {
		t.Fatal("a refused create left a space behind")
	}
}

func TestCheckSeqCommands(t *testing.T) {
	long := string(make([]byte, MaxDescriptionLen+1))
	raise := func(items ...*seqsvrv1.SectionRaise) *seqsvrv1.RaiseSectionsCommand {
		return &seqsvrv1.RaiseSectionsCommand{NodeId: "a", InstanceId: "i", Space: "s", Sections: items}
	}
	many := make([]*seqsvrv1.SectionRaise, spec.MaxRaiseSections+1)
	for i := range many {
		many[i] = &seqsvrv1.SectionRaise{Section: uint64(i)}
	}
	for name, c := range map[string]struct {
		err error
		ok  bool
	}{
		"create ok":          {check(&seqsvrv1.CreateSpaceCommand{Space: "s"}, 0), true},
		"create bad name":    {check(&seqsvrv1.CreateSpaceCommand{Space: "a b"}, 0), false},
		"create long desc":   {check(&seqsvrv1.CreateSpaceCommand{Space: "s", Description: long}, 0), false},
		"create bad shape":   {check(&seqsvrv1.CreateSpaceCommand{Space: "s", SectionSize: spec.MaxSectionSize + 1}, 0), false},
		"heartbeat ok":       {check(&seqsvrv1.SeqHeartbeatCommand{NodeId: "a", InstanceId: "i", Released: []*seqsvrv1.SectionSpan{span("s", 2, 2)}}, 0), true},
		"heartbeat no node":  {check(&seqsvrv1.SeqHeartbeatCommand{InstanceId: "i"}, 0), false},
		"heartbeat no inst":  {check(&seqsvrv1.SeqHeartbeatCommand{NodeId: "a"}, 0), false},
		"heartbeat bad span": {check(&seqsvrv1.SeqHeartbeatCommand{NodeId: "a", InstanceId: "i", Released: []*seqsvrv1.SectionSpan{span("s", 3, 2)}}, 0), false},
		"raise ok":           {check(raise(&seqsvrv1.SectionRaise{Section: 1, KnownMax: -1}, &seqsvrv1.SectionRaise{Section: 2, KnownMax: 5}), 0), true},
		"raise empty":        {check(raise(), 0), false},
		"raise too many":     {check(raise(many...), 0), false},
		"raise duplicate":    {check(raise(&seqsvrv1.SectionRaise{Section: 1}, &seqsvrv1.SectionRaise{Section: 1}), 0), false},
		"raise known_max -2": {check(raise(&seqsvrv1.SectionRaise{Section: 1, KnownMax: -2}), 0), false},
		"raise bad space":    {check(&seqsvrv1.RaiseSectionsCommand{NodeId: "a", InstanceId: "i", Sections: many[:1]}, 0), false},
	} {
		if c.ok != (c.err == nil) || !c.ok && !errors.Is(c.err, errs.InvalidArgument) {
			t.Errorf("%s: %v", name, c.err)
		}
	}
}

// The lease rules of SeqHeartbeat: a twin is refused while the lease is
// live and changes nothing; after expiry a new instance takes the node
// over with its sections; leaving ends the lease and frees the sections.
func TestFSMSeqHeartbeatLease(t *testing.T) {
	f := New(nil)
	mustApply(t, f, 1000, spaceCmd("s", 4, 1, 10))
	r := mustApply(t, f, 1000, hbCmd("a", "i1", false))
	if hb := r.Heartbeat; hb.GetLeaseExpiresMs() != 1000+seqTTL || hb.GetLeaseTtlMs() != seqTTL || hb.GetLeaderNowMs() != 1000 ||
		len(hb.GetTables()) != 1 || hb.GetTables()[0].GetSections()[0].GetOwnerUrl() != "http://a" ||
		hb.GetTables()[0].GetSections()[0].GetLeaseExpiresMs() != 1000+seqTTL {
		t.Fatalf("heartbeat answer %v", hb)
	}
	wantRuns(t, f, "s", run{0, 3, "a", ""})

	wantErr(t, f, 1000+seqTTL-1, hbCmd("a", "i2", false), ErrSeqNodeHeld)
	if m := f.st.seqMembers["a"]; m.GetInstanceId() != "i1" || m.GetLeaseExpiresMs() != 1000+seqTTL {
		t.Fatalf("a refused twin changed the member: %v", m)
	}
	// The same instance renews; the twin may take over only once it expired.
	mustApply(t, f, 1050, hbCmd("a", "i1", false))
	wantErr(t, f, 1050+seqTTL-1, hbCmd("a", "i2", false), errs.FailedPrecondition)
	r = mustApply(t, f, 1050+seqTTL, hbCmd("a", "i2", false))
	if r.Heartbeat.GetLeaseExpiresMs() != 1050+2*seqTTL || f.st.seqMembers["a"].GetInstanceId() != "i2" {
		t.Fatalf("takeover: %v", r.Heartbeat)
	}
	wantRuns(t, f, "s", run{0, 3, "a", ""})
	// The old instance is now the twin.
	wantErr(t, f, 1200, hbCmd("a", "i1", false), ErrSeqNodeHeld)

	r = mustApply(t, f, 1200, hbCmd("a", "i2", true))
	if m := f.st.seqMembers["a"]; !m.GetLeaving() || m.GetLeaseExpiresMs() != 1200 || r.Heartbeat.GetLeaseExpiresMs() != 1200 {
		t.Fatalf("leaving member %v", m)
	}
	wantRuns(t, f, "s", run{0, 3, "", ""})
	// A node that left is free at once.
	mustApply(t, f, 1201, hbCmd("a", "i3", false))
	wantRuns(t, f, "s", run{0, 3, "a", ""})
}

func TestTargetsMatchTheFormula(t *testing.T) {
	live := []string{"a", "b", "c", "d", "e", "f", "g"}
	for n := uint64(1); n <= 30; n++ {
		for k := 0; k <= len(live); k++ {
			rs := targets(n, live[:k])
			var s uint64
			for _, r := range rs {
				if r.first != s || r.last < r.first {
					t.Fatalf("n=%d k=%d: runs %+v do not tile", n, k, rs)
				}
				for ; s <= r.last; s++ {
					want := ""
					if k > 0 {
						want = live[s*uint64(k)/n]
					}
					if r.owner != want {
						t.Fatalf("n=%d k=%d: section %d goes to %q, want %q", n, k, s, r.owner, want)
					}
				}
			}
			if s != n {
				t.Fatalf("n=%d k=%d: runs %+v stop at %d", n, k, rs, s)
			}
		}
	}
}

// Rebalance step by step on one space of 10 sections.
func TestFSMRebalance(t *testing.T) {
	f := New(nil)
	mustApply(t, f, 1000, spaceCmd("s", 10, 1, 10))
	version := uint64(1)
	steps := []struct {
		name    string
		now     int64
		cmd     *seqsvrv1.Command
		want    []run
		changed bool
	}{
		{"one node gets all", 1000, hbCmd("a", "a1", false), []run{{0, 9, "a", ""}}, true},
		{"renewal changes nothing", 1010, hbCmd("a", "a1", false), []run{{0, 9, "a", ""}}, false},
		{"a second node waits for a handover", 1020, hbCmd("b", "b1", false), []run{{0, 4, "a", ""}, {5, 9, "a", "b"}}, true},
		{"b's renewal changes nothing", 1030, hbCmd("b", "b1", false), []run{{0, 4, "a", ""}, {5, 9, "a", "b"}}, false},
		{"a partial release moves that part", 1040, hbCmd("a", "a1", false, span("s", 5, 6)), []run{{0, 4, "a", ""}, {5, 6, "b", ""}, {7, 9, "a", "b"}}, true},
		{"a release of what a does not own is ignored", 1050, hbCmd("a", "a1", false, span("s", 5, 6), span("nope", 0, 1)), []run{{0, 4, "a", ""}, {5, 6, "b", ""}, {7, 9, "a", "b"}}, false},
		{"the rest is released", 1060, hbCmd("a", "a1", false, span("s", 7, 100)), []run{{0, 4, "a", ""}, {5, 9, "b", ""}}, true},
		{"a third node", 1070, hbCmd("c", "c1", false), []run{{0, 3, "a", ""}, {4, 4, "a", "b"}, {5, 6, "b", ""}, {7, 9, "b", "c"}}, true},
		{"releases balance evenly", 1080, hbCmd("b", "b1", false, span("s", 7, 9)), []run{{0, 3, "a", ""}, {4, 4, "a", "b"}, {5, 6, "b", ""}, {7, 9, "c", ""}}, true},
		{"", 1090, hbCmd("a", "a1", false, span("s", 4, 4)), []run{{0, 3, "a", ""}, {4, 6, "b", ""}, {7, 9, "c", ""}}, true},
		// a's lease (renewed at 1090) and b's (1080) run out; c heartbeats
		// after both expired: their sections move without a release.
		{"expired owners lose their sections", 1190, hbCmd("c", "c1", false), []run{{0, 9, "c", ""}}, true},
		{"a comes back", 1200, hbCmd("a", "a1", false), []run{{0, 4, "c", "a"}, {5, 9, "c", ""}}, true},
		{"c leaves: a gets everything at once", 1210, hbCmd("c", "c1", true), []run{{0, 9, "a", ""}}, true},
	}
	for _, s := range steps {
		r := mustApply(t, f, s.now, s.cmd)
		wantRuns(t, f, "s", s.want...)
		_, v := routing(f, "s")
		if s.changed {
			version++
		}
		if v != version || r.Heartbeat.GetTables()[0].GetRoutingVersion() != version {
			t.Fatalf("%s: routing_version %d (answered %d), want %d", s.name, v, r.Heartbeat.GetTables()[0].GetRoutingVersion(), version)
		}
	}
}

// Created after three nodes heartbeat, a space is split evenly at once.
func TestFSMCreateSpaceBalances(t *testing.T) {
	f := New(nil)
	for _, n := range []string{"c", "a", "b"} {
		mustApply(t, f, 1000, hbCmd(n, n+"1", false))
	}
	mustApply(t, f, 1000, spaceCmd("nine", 9, 1, 1))
	wantRuns(t, f, "nine", run{0, 2, "a", ""}, run{3, 5, "b", ""}, run{6, 8, "c", ""})
	if _, v := routing(f, "nine"); v != 2 {
		t.Fatalf("routing_version %d, want 2 (created, then balanced)", v)
	}
	mustApply(t, f, 1000, spaceCmd("two", 2, 1, 1))
	wantRuns(t, f, "two", run{0, 0, "a", ""}, run{1, 1, "b", ""})
}

func TestFSMRaiseSections(t *testing.T) {
	f := New(nil)
	mustApply(t, f, 1000, spaceCmd("s", 4, 1, 100))
	mustApply(t, f, 1000, spaceCmd("huge", 2, 1, spec.MaxSeqStep))
	mustApply(t, f, 1000, hbCmd("a", "a1", false))
	mustApply(t, f, 1001, hbCmd("b", "b1", false)) // a owns all; 2..3 wait for b
	mustApply(t, f, 1001, hbCmd("x", "x1", true))  // a member that left
	steps := []struct {
		name    string
		now     int64
		cmd     *seqsvrv1.Command
		wantErr error
		want    [][3]int64 // section, prev_max, max_seq
	}{
		{"first load", 1010, raiseCmd("a", "a1", "s", 0, -1), nil, [][3]int64{{0, 0, 100}}},
		{"a second first load answers the new prev_max", 1010, raiseCmd("a", "a1", "s", 0, -1), nil, [][3]int64{{0, 100, 200}}},
		{"raise ahead", 1010, raiseCmd("a", "a1", "s", 0, 200), nil, [][3]int64{{0, 200, 300}}},
		{"the retry is idempotent", 1010, raiseCmd("a", "a1", "s", 0, 200), nil, [][3]int64{{0, 300, 300}}},
		{"a stale known_max never lowers", 1010, raiseCmd("a", "a1", "s", 0, 0), nil, [][3]int64{{0, 300, 300}}},
		{"several, with a pending next owner", 1010, raiseCmd("a", "a1", "s", 1, -1, 3, 50), nil, [][3]int64{{1, 0, 100}, {3, 0, 150}}},
		{"unknown space", 1010, raiseCmd("a", "a1", "nope", 0, -1), errs.NotFound, nil},
		{"section out of range", 1010, raiseCmd("a", "a1", "s", 4, -1), errs.InvalidArgument, nil},
		{"not the owner", 1010, raiseCmd("b", "b1", "s", 2, -1), ErrNotSectionOwner, nil},
		{"another instance", 1010, raiseCmd("a", "a2", "s", 0, -1), ErrNotSectionOwner, nil},
		{"unknown member", 1010, raiseCmd("z", "z1", "s", 0, -1), ErrNotSectionOwner, nil},
		{"a member that left", 1010, raiseCmd("x", "x1", "s", 0, -1), ErrNotSectionOwner, nil},
		{"expired lease", 1000 + seqTTL, raiseCmd("a", "a1", "s", 0, -1), ErrNotSectionOwner, nil},
		{"overflow", 1010, raiseCmd("a", "a1", "huge", 0, math.MaxInt64-10), errs.ResourceExhausted, nil},
		{"all or nothing: a bad section", 1010, raiseCmd("a", "a1", "s", 0, -1, 9, -1), errs.InvalidArgument, nil},
		{"all or nothing: an overflow", 1010, raiseCmd("a", "a1", "huge", 1, -1, 0, math.MaxInt64-10), errs.ResourceExhausted, nil},
		{"all or nothing: not the owner", 1011, raiseCmd("b", "b1", "s", 0, -1), errs.FailedPrecondition, nil},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			before := withoutLast(f.st.toProto())
			r := applyAt(t, f, s.now, s.cmd)
			if !errors.Is(r.Err, s.wantErr) || (s.wantErr == nil) != (r.Err == nil) {
				t.Fatalf("err %v, want %v", r.Err, s.wantErr)
			}
			if s.wantErr != nil {
				if after := withoutLast(f.st.toProto()); !proto.Equal(before, after) {
					t.Fatalf("a refused raise changed the state")
				}
				return
			}
			got := r.Raise.GetSections()
			if len(got) != len(s.want) || r.Raise.GetRoutingVersion() != 3 {
				t.Fatalf("answer %v", r.Raise)
			}
			for i, w := range s.want {
				if int64(got[i].GetSection()) != w[0] || got[i].GetPrevMax() != w[1] || got[i].GetMaxSeq() != w[2] ||
					maxSeq(f, "s", got[i].GetSection()) != w[2] {
					t.Fatalf("section %d: %v, want prev %d max %d", w[0], got[i], w[1], w[2])
				}
			}
		})
	}
}
