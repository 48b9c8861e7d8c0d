package nemesis

import (
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// TestSeqFenceMarginOf: the margin comes from the attacked allocsvr's own
// flags, and the last one counts, as it does for the allocsvr (a run's
// defaults come first, a scenario's override after them).
func TestSeqFenceMarginOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
		want  time.Duration
		ok    bool
	}{
		{"separate value", []string{"--seq-fence-margin", "500ms"}, 500 * time.Millisecond, true},
		{"with =", []string{"--seq-fence-margin=750ms"}, 750 * time.Millisecond, true},
		{"last wins", []string{"--seq-fence-margin", "500ms", "--x", "1", "--seq-fence-margin=1s"}, time.Second, true},
		{"absent", []string{"--seq-heartbeat-interval", "100ms"}, 0, false},
		{"not a duration", []string{"--seq-fence-margin", "soon"}, 0, false},
		{"zero", []string{"--seq-fence-margin", "0s"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &launch.Proc{Name: "a1", NodeID: "a1", Kind: launch.KindAlloc, ExtraArgs: tc.extra}
			got, err := seqFenceMarginOf(a)
			if (err == nil) != tc.ok || got != tc.want {
				t.Fatalf("seqFenceMarginOf(%q) = %v, %v; want %v, ok %v", tc.extra, got, err, tc.want, tc.ok)
			}
		})
	}
}
