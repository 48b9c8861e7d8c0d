//go:build !faults

package segment

// dropsCarry is the hook of the planted bug switch-drops-carry (see
// planted_faults.go): the constant false outside -tags faults builds.
func dropsCarry() bool { return false }
