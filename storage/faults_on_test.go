//go:build faults

package storage

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/faults"
)

// snapshotMaxID is tag's max_id in what f's Snapshot would persist.
func snapshotMaxID(t *testing.T, f *fsm, tag string) int64 {
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
	f := newFSM(nil)
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
	f := newFSM(nil)
	applyAt(t, f, 1, createCmd("a", 500, 10))
	if got := snapshotMaxID(t, f, "a"); got != 500 {
		t.Fatalf("snapshot max_id %d, want 500", got)
	}
	if plantedStaleReads() {
		t.Fatal("stale-reads active without being planted")
	}
	if _, ok := (&Store{}).plantedReserveBeforeCommit(reserveCmd("a", 0, "", 0)); ok {
		t.Fatal("reserve-before-commit active without being planted")
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
	f := newFSM(nil)
	applyAt(t, f, 1, createCmd("a", 0, 10))
	r1 := applyAt(t, f, 2, reserveCmd("a", 0, "q", 0))
	r2 := applyAt(t, f, 3, reserveCmd("a", 0, "q", 0))
	if r1.err != nil || r2.err != nil {
		t.Fatalf("reserve: %v, %v", r1.err, r2.err)
	}
	return r1.seg.GetFirst(), r2.seg.GetFirst()
}

// takeoverFloor is the floor a new instance gets when it takes a worker
// ID over right as the old one's lease (3 s, last reported at 5000 on
// the old holder's clock) expired, its own clock behind at 4200.
func takeoverFloor(t *testing.T) int64 {
	t.Helper()
	f := newFSM(nil)
	applyAt(t, f, 1000, registerCmd("n", "old", 1000, 3000, 0))
	applyAt(t, f, 5000, renewCmd("n", 0, "old", 5000, 3000))
	r := applyAt(t, f, 8001, registerCmd("n", "new", 5000, 3000, 0))
	if r.err != nil {
		t.Fatal(r.err)
	}
	return r.worker.state.GetLastTimestampMs()
}

// With SEQSVR_FAULTS_BUGS naming them (in a child process: the variable is
// read at start), the hooks plant the bugs jepsen must catch.
func TestPlantedBugsWhenNamed(t *testing.T) {
	if os.Getenv("STORAGE_PLANTED_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPlantedBugsWhenNamed$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STORAGE_PLANTED_CHILD=1", "SEQSVR_FAULTS_BUGS="+
			strings.Join([]string{faults.BugStaleReads, faults.BugSnapshotDropsMaxID, faults.BugReserveBeforeCommit, faults.BugSeqNoHandoverWait,
				faults.BugTakeoverNoMargin, faults.BugIgnoreRequestID}, ","))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	f := newFSM(nil)
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
	// No raft at all: a read is served without consulting it.
	if err := (&Store{}).linearize(context.Background()); err != nil {
		t.Fatalf("stale-reads: linearize = %v", err)
	}
	if testing.Short() {
		return
	}
	c := newTestCluster(t, 1, nil)
	leader := c.waitForLeader().store
	if _, err := leader.createTag(context.Background(), &seqsvrv1.CreateTagRequest{Tag: "r", Step: 10}); err != nil {
		t.Fatal(err)
	}
	seg, err := leader.reserveSegment(context.Background(), &seqsvrv1.ReserveSegmentRequest{Tag: "r"})
	if err != nil || seg.GetFirst() != 1 || seg.GetLast() != 10 {
		t.Fatalf("reserve-before-commit: %v %v", seg, err)
	}
	eventually(t, 5*time.Second, "the background proposal to commit", func() bool { return maxID(leader.fsm, "r") == 10 })
}

// reserveUncommitted answers the range the FSM would reserve next and
// commits it in the background; it declines what the FSM would refuse.
func TestReserveUncommitted(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	leader := c.waitForLeader().store
	if _, err := leader.createTag(context.Background(), &seqsvrv1.CreateTagRequest{Tag: "r", Start: 100, Step: 10}); err != nil {
		t.Fatal(err)
	}
	seg, ok := leader.reserveUncommitted(reserveCmd("r", 5, "q", 0))
	if !ok || seg.GetTag() != "r" || seg.GetFirst() != 101 || seg.GetLast() != 105 || seg.GetStep() != 10 {
		t.Fatalf("segment %v %v, want [101,105] step 10", seg, ok)
	}
	eventually(t, 5*time.Second, "the background proposal to commit", func() bool { return maxID(leader.fsm, "r") == 105 })
	if _, ok := leader.reserveUncommitted(reserveCmd("missing", 0, "", 0)); ok {
		t.Fatal("answered for an unknown tag")
	}
}
