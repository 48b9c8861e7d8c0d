package seq

import (
	"fmt"
	"testing"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// TestTableSetFind: the one-key path's lookup answers the same table as
// the map, with few spaces (slice scan) and with many (the map), and nil
// for a space not in the set, including a name that differs by length
// only or shares a prefix.
func TestTableSetFind(t *testing.T) {
	for _, count := range []int{0, 1, 3, maxFewSpaces, maxFewSpaces + 1, 20} {
		var msgs []*seqsvrv1.RoutingTable
		for i := range count {
			msgs = append(msgs, &seqsvrv1.RoutingTable{Space: fmt.Sprintf("space%d", i), SectionSize: 10, KeyCount: 100})
		}
		ts := newTables(msgs)
		set := newTableSet(ts)
		if (set.few != nil) != (count <= maxFewSpaces) {
			t.Fatalf("%d spaces: slice used %v", count, set.few != nil)
		}
		for name, want := range ts {
			if got := set.find(name); got != want {
				t.Fatalf("%d spaces: find(%q) = %p, want %p", count, name, got, want)
			}
		}
		for _, name := range []string{"", "space", "space00", "space1x", "Space1", "other"} {
			if got := set.find(name); got != ts[name] {
				t.Fatalf("%d spaces: find(%q) = %v, want %v", count, name, got, ts[name])
			}
		}
	}
}
