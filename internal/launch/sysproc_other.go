//go:build !linux

package launch

import (
	"errors"
	"syscall"
)

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitStopped is a no-op where /proc is not there to ask.
func waitStopped(int) {}

// CPUTicks needs /proc.
func CPUTicks(int) (int64, error) { return 0, errors.New("no /proc to read CPU time from") }
