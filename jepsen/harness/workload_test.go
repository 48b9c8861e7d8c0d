package harness

import "testing"

// TestRefused: only the store's answers that say nothing was proposed
// make a failed call one without effect.
func TestRefused(t *testing.T) {
	for msg, want := range map[string]bool{
		"unavailable: no raft leader: no leader is known to s2; retry":                                       true,
		"unavailable: not the raft leader: forwarded here, but this member no longer leads; retry":           true,
		"unavailable: dial tcp 127.0.0.1:4000: connect: connection refused":                                  true,
		"unavailable: unavailable: leadership lost while committing; the write may have committed":           false,
		"deadline_exceeded: context deadline exceeded":                                                       false,
		"unavailable: unexpected EOF":                                                                        false,
		`canceled: Post "http://127.0.0.1:1/x": read tcp 127.0.0.1:2->127.0.0.1:1: connection reset by peer`: false,
	} {
		if got := refused(msg); got != want {
			t.Errorf("refused(%q) = %v, want %v", msg, got, want)
		}
	}
}

// TestHotKeys: the per-key workers' keys are distinct, inside the space,
// and every section has some, so every move of a section is exercised.
func TestHotKeys(t *testing.T) {
	keys := hotKeys(30)
	perSection := map[uint64]int{}
	seen := map[uint64]bool{}
	for _, k := range keys {
		if k >= seqKeys || seen[k] {
			t.Fatalf("key %d outside the space or repeated: %v", k, keys)
		}
		seen[k] = true
		perSection[k/seqSectionSize]++
	}
	if len(perSection) != seqKeys/seqSectionSize {
		t.Fatalf("hot keys in %d of %d sections: %v", len(perSection), seqKeys/seqSectionSize, keys)
	}
}
