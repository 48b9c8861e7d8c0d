package fsm

import (
	"bytes"
	"io"
	"testing"
)

// A state the state machine itself built passes CheckState: the base
// release's snapshot, as --recover on an upgraded member reads it (it has
// no cluster ID: the base release set none).
func TestCheckStateAcceptsRealStates(t *testing.T) {
	f := New(nil)
	if err := f.Restore(io.NopCloser(bytes.NewReader(readGolden(t, baseSnapshot)))); err != nil {
		t.Fatal(err)
	}
	if ps := CheckState(f.State()); ps != nil {
		t.Fatalf("the base release's snapshot breaks the rules: %v", ps)
	}
}
