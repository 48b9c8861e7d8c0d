//go:build !faults

package alloc

// repeatCarried is the hook of the planted bug front-repeats-carry (see
// planted_faults.go): nothing outside -tags faults builds.
func repeatCarried([]int64) {}
