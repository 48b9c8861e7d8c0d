package fsm

import (
	"bytes"
	"io"
	"testing"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// A fresh cluster is generation 0; a restored one keeps the generation the
// restore wrote through every later snapshot, and a snapshot install
// replaces it.
func TestGenerationSurvivesSnapshots(t *testing.T) {
	if g := New(nil).Generation(); g != 0 {
		t.Fatalf("fresh: generation %d, want 0", g)
	}
	// As a restore seeds it: the first snapshot of the new cluster.
	var sink memSink
	if err := SnapshotOf(&seqsvrv1.FSMSnapshot{ClusterId: "new", Generation: 1_800_000_000_000}).Persist(&sink); err != nil {
		t.Fatal(err)
	}
	m := New(nil)
	if err := m.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	// Commands after the restore leave it.
	applyAt(t, m, 10, createCmd("a", 0, 10))
	applyAt(t, m, 11, &seqsvrv1.Command{Cmd: &seqsvrv1.Command_Noop{Noop: &seqsvrv1.NoopCommand{ClusterId: "other", ClusterVersion: Level}}})
	if g, id := m.Generation(), m.ClusterID(); g != 1_800_000_000_000 || id != "new" {
		t.Fatalf("after restore and commands: generation %d cluster %q", g, id)
	}
	// The member's own snapshot carries it to a member that installs it.
	r := New(nil)
	applyAt(t, r, 1, createCmd("b", 0, 10))
	if err := r.Restore(io.NopCloser(bytes.NewReader(persist(t, m)))); err != nil {
		t.Fatal(err)
	}
	if g := r.Generation(); g != 1_800_000_000_000 {
		t.Fatalf("installed snapshot: generation %d", g)
	}
	if g := r.State().GetGeneration(); g != 1_800_000_000_000 {
		t.Fatalf("State (what a backup copies): generation %d", g)
	}
}

// A generation below 0 is refused in a state read from outside.
func TestCheckStateNegativeGeneration(t *testing.T) {
	if ps := CheckState(&seqsvrv1.FSMSnapshot{Generation: -1}); len(ps) == 0 {
		t.Fatal("generation -1 accepted")
	}
	if ps := CheckState(&seqsvrv1.FSMSnapshot{Generation: 5}); len(ps) != 0 {
		t.Fatalf("generation 5 refused: %v", ps)
	}
}
