//go:build faults

package fsm

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/faults"
)

// snapshotMaxID is tag's max_id in what f's Snapshot would persist.
func snapshotMaxID(t *testing.T, f *Machine, tag string) int64 {
	t.Helper()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range snap.(*fsmSnapshot).snap.GetTags() {
		if tg.GetTag() == tag {
			return tg.GetMaxId()
		}
	}
	t.Fatalf("tag %q not in the snapshot", tag)
	return 0
}

// handoverRuns is the routing of a 4-section space after a second allocsvr
// joins a live one: without seq-no-handover-wait, sections 2..3 stay with
// a and wait for b.
func handoverRuns(t *testing.T) []run {
	t.Helper()
	f := New(nil)
	mustApply(t, f, 1000, hbCmd("a", "a1", false))
	mustApply(t, f, 1000, spaceCmd("s", 4, 1, 10))
	mustApply(t, f, 1001, hbCmd("b", "b1", false))
	runs, _ := routing(f, "s")
	return runs
}

// The bugs are planted only by name: in this process none is, so every
// hook is inert even in a faults build.
func TestPlantedBugsOffUnlessNamed(t *testing.T) {
	if os.Getenv("SEQSVR_FAULTS_BUGS") != "" {
		t.Skip("bugs planted in this process")
	}
	f := New(nil)
	applyAt(t, f, 1, createCmd("a", 500, 10))
	if got := snapshotMaxID(t, f, "a"); got != 500 {
		t.Fatalf("snapshot max_id %d, want 500", got)
	}
	if got, want := handoverRuns(t), []run{{0, 1, "a", ""}, {2, 3, "a", "b"}}; !slices.Equal(got, want) {
		t.Fatalf("handover without the bug: %+v, want %+v", got, want)
	}
	if first, second := retriedSegments(t); first != second {
		t.Fatalf("a retried request_id got [%d] then [%d] without ignore-request-id", first, second)
	}
	if got := takeoverFloor(t); got != 5000+3000 {
		t.Fatalf("takeover floor %d without takeover-no-margin, want the last report + TTL (8000)", got)
	}
}

// retriedSegments reserves twice with one request_id and returns the
// first ID of each answer.
func retriedSegments(t *testing.T) (int64, int64) {
	t.Helper()
	f := New(nil)
	applyAt(t, f, 1, createCmd("a", 0, 10))
	r1 := applyAt(t, f, 2, reserveCmd("a", 0, "q", 0))
	r2 := applyAt(t, f, 3, reserveCmd("a", 0, "q", 0))
	if r1.Err != nil || r2.Err != nil {
		t.Fatalf("reserve: %v, %v", r1.Err, r2.Err)
	}
	return r1.Seg.GetFirst(), r2.Seg.GetFirst()
}

// takeoverFloor is the floor a new instance gets when it takes a worker
// ID over right as the old one's lease (3 s, last reported at 5000 on
// the old holder's clock) expired, its own clock behind at 4200.
func takeoverFloor(t *testing.T) int64 {
	t.Helper()
	f := New(nil)
	applyAt(t, f, 1000, registerCmd("n", "old", 1000, 3000, 0))
	applyAt(t, f, 5000, renewCmd("n", 0, "old", 5000, 3000))
	r := applyAt(t, f, 8001, registerCmd("n", "new", 5000, 3000, 0))
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	return r.Worker.State.GetLastTimestampMs()
}

// With SEQSVR_FAULTS_BUGS naming them (in a child process: the variable is
// read at start), the hooks plant the bugs jepsen must catch.
func TestPlantedBugsWhenNamed(t *testing.T) {
	if os.Getenv("STORAGE_PLANTED_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPlantedBugsWhenNamed$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STORAGE_PLANTED_CHILD=1", "SEQSVR_FAULTS_BUGS="+
			strings.Join([]string{faults.BugSnapshotDropsMaxID, faults.BugSeqNoHandoverWait,
				faults.BugTakeoverNoMargin, faults.BugIgnoreRequestID}, ","))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	f := New(nil)
	applyAt(t, f, 1, createCmd("a", 500, 10))
	if got := snapshotMaxID(t, f, "a"); got != 0 {
		t.Fatalf("snapshot-drops-maxid: snapshot max_id %d, want 0", got)
	}
	if maxID(f, "a") != 500 {
		t.Fatal("snapshot-drops-maxid changed the live state")
	}
	// seq-no-handover-wait: b serves 2..3 while a, still live, may too.
	if got, want := handoverRuns(t), []run{{0, 1, "a", ""}, {2, 3, "b", ""}}; !slices.Equal(got, want) {
		t.Fatalf("seq-no-handover-wait: %+v, want %+v", got, want)
	}
	// ignore-request-id: the retry reserved a second segment.
	if first, second := retriedSegments(t); first == second {
		t.Fatalf("ignore-request-id: the retry got the same segment [%d]", first)
	}
	// takeover-no-margin: the new holder starts at the old one's last
	// report, below what the old one may still have issued.
	if got := takeoverFloor(t); got != 5000 {
		t.Fatalf("takeover-no-margin: floor %d, want 5000", got)
	}
}

// ungated-new-field: this build applies the planted field, which survives
// the command's encoding as an unknown field; the same command without it
// (what the base release makes of it: it has no such field) reserves just
// above max_id. That difference is the divergence the upgrade scenario
// must catch.
func TestPlantedGapFieldApplied(t *testing.T) {
	withField := reserveCmd("t", 10, "", 0)
	PlantGap(withField.GetReserveSegment())
	for _, tc := range []struct {
		name      string
		cmd       *seqsvrv1.Command
		wantFirst int64
	}{
		{"without the field", reserveCmd("t", 10, "", 0), 1},
		{"with the field", withField, 1 + plantedGap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := New(nil)
			mustApply(t, f, 1000, createCmd("t", 0, 10))
			r := mustApply(t, f, 1001, tc.cmd) // through proto bytes, as raft delivers it
			if r.Seg.GetFirst() != tc.wantFirst || r.Tag.GetMaxId() != tc.wantFirst+9 {
				t.Fatalf("segment %d..%d max_id %d, want first %d", r.Seg.GetFirst(), r.Seg.GetLast(), r.Tag.GetMaxId(), tc.wantFirst)
			}
		})
	}
}
