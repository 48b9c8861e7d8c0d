package cluster

import "syscall"

// sysProcAttr puts the child in its own process group (so signals reach its
// children too and a terminal's Ctrl-C is ours to forward) and kills it when
// this process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
