package client

import "testing"

// CheckUniqueIncreasing fails t if an ID appears twice across got (one
// slice per goroutine) or does not rise within its goroutine's slice; it
// returns every ID seen. Exported for the client_test package's tests.
func CheckUniqueIncreasing(t testing.TB, got [][]int64) map[int64]bool {
	t.Helper()
	seen := map[int64]bool{}
	for w, ids := range got {
		for i, id := range ids {
			if seen[id] {
				t.Fatalf("ID %d handed out twice", id)
			}
			seen[id] = true
			if i > 0 && id <= ids[i-1] {
				t.Fatalf("goroutine %d: ID %d after %d", w, id, ids[i-1])
			}
		}
	}
	return seen
}
