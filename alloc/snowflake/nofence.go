//go:build !faults

package snowflake

// noSelfFence is the hook of the planted bug no-self-fence (see
// nofence_faults.go). Outside -tags faults builds it is the constant false:
// production binaries hold no planted bug, and the compiler drops every
// branch it guards.
func noSelfFence() bool { return false }

// plantedNote is only reached when noSelfFence is true.
func plantedNote(string) string { return "" }

// ignoreHighWater is the hook of the planted bug restart-ignores-hwm; the
// constant false here.
func ignoreHighWater() bool { return false }
