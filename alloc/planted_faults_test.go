//go:build faults

package alloc

import (
	"slices"
	"testing"
)

// The planted bug front-repeats-carry changes an answer only where its
// IDs jump from one range to the next, and only when planted.
func TestPlantedRepeatsCarry(t *testing.T) {
	ids := []int64{7, 8, 9, 51, 52}
	repeatCarried(ids)
	if !slices.Equal(ids, []int64{7, 8, 9, 51, 52}) {
		t.Fatalf("not planted, answer changed: %v", ids)
	}
	plantedRepeatsCarry = true
	t.Cleanup(func() { plantedRepeatsCarry = false })
	repeatCarried(ids)
	if !slices.Equal(ids, []int64{7, 8, 9, 9, 52}) {
		t.Fatalf("planted: %v, want the carried range's last ID repeated", ids)
	}
	one := []int64{1, 2, 3}
	repeatCarried(one)
	if !slices.Equal(one, []int64{1, 2, 3}) {
		t.Fatalf("planted, one range changed: %v", one)
	}
}
