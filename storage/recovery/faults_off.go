//go:build !faults

package recovery

// The planted bug's hook in the restore, for builds without -tags faults:
// a constant no-op the compiler removes. The bug itself is in
// faults_on.go.

func plantedRestoreNoJump() bool { return false }
