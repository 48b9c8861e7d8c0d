package backup

import (
	"testing"
)

// The generation is kept by a backup file and shown by its summary.
func TestGenerationRoundTrip(t *testing.T) {
	in := sample()
	in.Generation, in.State.Generation = 1_800_000_000_000, 1_800_000_000_000
	file, err := Encode(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Decode(file)
	if err != nil {
		t.Fatal(err)
	}
	if out.GetGeneration() != 1_800_000_000_000 || out.GetState().GetGeneration() != 1_800_000_000_000 {
		t.Fatalf("generation %d, state's %d", out.GetGeneration(), out.GetState().GetGeneration())
	}
	if s := Summarize(out, len(file)); s.Generation != 1_800_000_000_000 {
		t.Fatalf("summary generation %d", s.Generation)
	}
	// A file that holds it only in the state (or only beside it) shows it.
	out.Generation = 0
	if s := Summarize(out, len(file)); s.Generation != 1_800_000_000_000 {
		t.Fatalf("summary of the state's generation: %d", s.Generation)
	}
}
