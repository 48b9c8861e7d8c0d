//go:build !linux

package cluster

import "syscall"

func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitStopped is a no-op where /proc is not there to ask.
func waitStopped(int) {}
