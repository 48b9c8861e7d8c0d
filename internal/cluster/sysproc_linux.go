package cluster

import (
	"bytes"
	"fmt"
	"os"
	"syscall"
	"time"
)

// sysProcAttr puts the child in its own process group (so signals reach its
// children too and a terminal's Ctrl-C is ours to forward) and kills it when
// this process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitStopped returns once every thread of pid shows as stopped in /proc
// (or after a second): kill(2) only queues SIGSTOP, and a thread running on
// another core may still answer a request that arrives just after it, which
// a test that pauses a server to see a call time out must not race.
func waitStopped(pid int) {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if allStopped(pid) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func allStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return true // gone, or no /proc: nothing to wait for
	}
	for _, t := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil {
			continue // the thread exited
		}
		// The state follows the command name, which is in parentheses
		// and may itself hold spaces or parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 || i+2 >= len(b) {
			continue
		}
		if s := b[i+2]; s != 'T' && s != 't' {
			return false
		}
	}
	return true
}
