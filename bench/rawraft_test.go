package bench

import (
	"context"
	"testing"
	"time"
)

// TestRawRaftReference keeps the reference honest: it must elect a leader
// and commit entries, or every ratio built on it is meaningless.
func TestRawRaftReference(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node raft cluster on disk")
	}
	rr, err := StartRawRaft(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	rate, err := rr.ApplyLoop(context.Background(), 4, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if rate <= 0 {
		t.Fatalf("no entries committed (rate %v)", rate)
	}
}
