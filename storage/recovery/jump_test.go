package recovery

import (
	"math"
	"testing"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

func TestCompute(t *testing.T) {
	cases := []struct {
		name                 string
		from, rate           int64
		over                 time.Duration
		minJump, floor, want int64
		saturated            bool
	}{
		{"rate wins", 10400, 1000, time.Hour, 0, 200, 10400 + 3_600_000, false},
		{"floor wins", 10400, 1, time.Second, 0, 200, 10600, false},
		{"min wins", 10400, 1000, time.Second, 50_000, 200, 60400, false},
		{"no rate recorded: floor", 0, 0, time.Hour, 0, 200, 200, false},
		{"nothing at all still moves", 5, 0, 0, 0, 0, 6, false},
		{"a part second counts whole", 0, 10, 1500 * time.Millisecond, 0, 0, 20, false},
		{"saturates", math.MaxInt64 - 10, 1000, time.Hour, 0, 0, math.MaxInt64, true},
		{"huge rate saturates the product", 0, math.MaxInt64 / 2, time.Hour, 0, 0, math.MaxInt64, false},
	}
	for _, c := range cases {
		got, sat := Compute(c.from, c.rate, c.over, c.minJump, c.floor)
		if got != c.want || sat != c.saturated {
			t.Errorf("%s: %d, %v; want %d, %v", c.name, got, sat, c.want, c.saturated)
		}
	}
}

func TestDefaultOver(t *testing.T) {
	for _, c := range []struct{ age, want time.Duration }{
		{0, time.Hour}, {-time.Minute, time.Hour}, {10 * time.Minute, time.Hour}, {3 * time.Hour, 6 * time.Hour},
	} {
		if got := DefaultOver(c.age); got != c.want {
			t.Errorf("DefaultOver(%v) = %v, want %v", c.age, got, c.want)
		}
	}
}

// Prepare over a state holding a measured tag, a tag created after the
// rates were recorded (no rate yet), a tombstoned tag, a space with one
// raised section, a worker and an allocsvr lease.
func TestPrepare(t *testing.T) {
	start := time.UnixMilli(1_800_000_000_000)
	old := &seqsvrv1.FSMSnapshot{
		ClusterId: "old",
		Tags: []*seqsvrv1.TagState{
			{Tag: "order", MaxId: 10400, Step: 100, Rate: &seqsvrv1.RateState{PeakPerSec: 1000}},
			{Tag: "fresh", MaxId: 0, Step: 5000},
		},
		Tombstones: []*seqsvrv1.TagState{{Tag: "gone", MaxId: 777, Rate: &seqsvrv1.RateState{PeakPerSec: 10}}},
		Spaces: []*seqsvrv1.SpaceState{{Space: "chat", KeyCount: 30, SectionSize: 10, Step: 7, RoutingVersion: 9,
			Sections: []*seqsvrv1.SectionRange{{FirstSection: 0, LastSection: 2, Owner: "a1"}},
			Maxes:    []*seqsvrv1.SectionMaxState{{Section: 1, MaxSeq: 70, UsedTracked: true, Used: []byte{1}, Rate: &seqsvrv1.RateState{PeakPerSec: 3}}}}},
		Workers:    []*seqsvrv1.WorkerState{{NodeId: "a1", WorkerId: 4, InstanceId: "i", LastTimestampMs: start.UnixMilli() - 5000, LeaseExpiresMs: start.UnixMilli() + 9000}},
		SeqMembers: []*seqsvrv1.SeqMemberState{{NodeId: "a1", InstanceId: "i", LeaseExpiresMs: start.UnixMilli() + 9000}},
		Requests:   []*seqsvrv1.RequestRecord{{RequestId: "r", Tag: "order", First: 1, Last: 100}},
		Members:    []*seqsvrv1.MemberInfo{{Id: "s2", HttpAddr: "x"}},
	}
	st, jumps, err := Prepare(old, Options{Over: time.Hour, MinJump: 10, MaxSegmentSize: 1000, Start: start, LeaseWait: 12 * time.Second, ClusterID: "new"})
	if err != nil {
		t.Fatal(err)
	}
	wantTo := map[string]int64{
		"order":                        10400 + 3_600_000, // rate x 1h
		"fresh":                        10000,             // no rate: 2 x the tag's step (5000 > max segment 1000)
		"tombstone gone":               777 + 36_000,      // its own recorded rate
		"chat/section 1":               70 + 10_800,       // 3/s x 1h
		"chat/2 sections never raised": 10_800,            // the space's fastest section's rate, from 0
	}
	if len(jumps) != len(wantTo) {
		t.Fatalf("jumps %v", jumps)
	}
	for _, j := range jumps {
		if want, ok := wantTo[j.Name]; !ok || j.To != want {
			t.Errorf("%s: %v, want to %d", j.Name, j, want)
		}
	}
	if got := st.GetTags()[0].GetMaxId(); got != 10400+3_600_000 {
		t.Errorf("order max_id %d", got)
	}
	if got := st.GetTombstones()[0].GetMaxId(); got != 777+36_000 {
		t.Errorf("tombstone max_id %d", got)
	}
	sp := st.GetSpaces()[0]
	if len(sp.GetMaxes()) != 3 {
		t.Fatalf("sections %v: every section must have a jumped max_seq", sp.GetMaxes())
	}
	for i, m := range sp.GetMaxes() {
		if m.GetSection() != uint64(i) || m.GetUsedTracked() || m.GetUsed() != nil || m.GetMaxSeq() < 10_800 {
			t.Errorf("section %v: want in order, jumped, used-set dropped", m)
		}
	}
	if len(sp.GetSections()) != 1 || sp.GetSections()[0].GetOwner() != "" || sp.GetRoutingVersion() != 9+routingJump {
		t.Errorf("routing %v version %d: want one unowned run, version jumped", sp.GetSections(), sp.GetRoutingVersion())
	}
	w := st.GetWorkers()[0]
	if w.GetInstanceId() != "" || w.GetLeaseExpiresMs() > start.UnixMilli() || w.GetLastTimestampMs() < start.UnixMilli() {
		t.Errorf("worker %v: want void lease, floor at the restore's start", w)
	}
	if st.GetSeqMembers() != nil || st.GetRequests() != nil || st.GetMembers() != nil {
		t.Errorf("leases, requests or members kept")
	}
	if st.GetClusterId() != "new" || st.GetRestoreFenceMs() != start.UnixMilli()+12_000 {
		t.Errorf("cluster %q fence %d", st.GetClusterId(), st.GetRestoreFenceMs())
	}
	if old.GetTags()[0].GetMaxId() != 10400 || old.GetClusterId() != "old" {
		t.Errorf("Prepare changed its input")
	}
}
