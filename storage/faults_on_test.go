//go:build faults

package storage

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/faults"
	"github.com/seqsvr/seqsvr/internal/poll"
)

func reserveCmd(tag string, size int64, reqID string) *seqsvrv1.Command {
	return &seqsvrv1.Command{Cmd: &seqsvrv1.Command_ReserveSegment{ReserveSegment: &seqsvrv1.ReserveSegmentCommand{Tag: tag, Size: size, RequestId: reqID}}}
}

// The server's bugs are planted only by name: in this process none is, so
// every hook is inert even in a faults build. (The state machine's are
// tested in package fsm.)
func TestPlantedBugsOffUnlessNamed(t *testing.T) {
	if os.Getenv("SEQSVR_FAULTS_BUGS") != "" {
		t.Skip("bugs planted in this process")
	}
	if plantedStaleReads() {
		t.Fatal("stale-reads active without being planted")
	}
	if plantedLocalReads() {
		t.Fatal("local-reads active without being planted")
	}
	if _, ok := (&Store{}).plantedReserveBeforeCommit(reserveCmd("a", 0, "")); ok {
		t.Fatal("reserve-before-commit active without being planted")
	}
	rc := reserveCmd("a", 0, "").GetReserveSegment()
	if plantedUngatedNewField(rc); len(rc.ProtoReflect().GetUnknown()) != 0 {
		t.Fatal("ungated-new-field active without being planted")
	}
}

// With SEQSVR_FAULTS_BUGS naming them (in a child process: the variable is
// read at start), the hooks plant the bugs jepsen must catch.
func TestPlantedBugsWhenNamed(t *testing.T) {
	if os.Getenv("STORAGE_PLANTED_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPlantedBugsWhenNamed$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STORAGE_PLANTED_CHILD=1", "SEQSVR_FAULTS_BUGS="+
			strings.Join([]string{faults.BugStaleReads, faults.BugReserveBeforeCommit, faults.BugLocalReads}, ","))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	// No raft at all: a read is served without consulting it.
	if err := (&Store{}).linearize(context.Background()); err != nil {
		t.Fatalf("stale-reads: linearize = %v", err)
	}
	if err := (&Store{}).linearizeRead(context.Background()); err != nil {
		t.Fatalf("local-reads: linearizeRead = %v", err)
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
	poll.Until(t, 5*time.Second, "the background proposal to commit", func() bool { return leader.fsm.Tag("r").GetMaxId() == 10 })
}

// With ungated-new-field named (in a child process, alone: its gap would
// move reserve-before-commit's ranges), every reservation carries the
// field.
func TestUngatedNewFieldWhenNamed(t *testing.T) {
	if os.Getenv("STORAGE_PLANTED_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUngatedNewFieldWhenNamed$", "-test.count=1")
		cmd.Env = append(os.Environ(), "STORAGE_PLANTED_CHILD=1", "SEQSVR_FAULTS_BUGS="+faults.BugUngatedNewField)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	rc := reserveCmd("a", 0, "").GetReserveSegment()
	if plantedUngatedNewField(rc); len(rc.ProtoReflect().GetUnknown()) == 0 {
		t.Fatal("ungated-new-field: the reservation carries no extra field")
	}
}

// reserveUncommitted answers the range the FSM would reserve next and
// commits it in the background; it declines what the FSM would refuse.
func TestReserveUncommitted(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	leader := c.waitForLeader().store
	if _, err := leader.createTag(context.Background(), &seqsvrv1.CreateTagRequest{Tag: "r", Start: 100, Step: 10}); err != nil {
		t.Fatal(err)
	}
	seg, ok := leader.reserveUncommitted(reserveCmd("r", 5, "q"))
	if !ok || seg.GetTag() != "r" || seg.GetFirst() != 101 || seg.GetLast() != 105 || seg.GetStep() != 10 {
		t.Fatalf("segment %v %v, want [101,105] step 10", seg, ok)
	}
	poll.Until(t, 5*time.Second, "the background proposal to commit", func() bool { return leader.fsm.Tag("r").GetMaxId() == 105 })
	if _, ok := leader.reserveUncommitted(reserveCmd("missing", 0, "")); ok {
		t.Fatal("answered for an unknown tag")
	}
}
