package launch

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
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
		f, err := statFields(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
		if err != nil || len(f) == 0 {
			continue // the thread exited
		}
		if s := f[0][0]; s != 'T' && s != 't' {
			return false
		}
	}
	return true
}

// CPUTicks is the CPU time (user + system, in clock ticks) process pid has
// used so far, from /proc/PID/stat. It counts the threads that exited
// too, which summing the threads' schedstat would miss. The tick length
// (USER_HZ) cancels out of any ratio of two readings.
func CPUTicks(pid int) (int64, error) {
	path := fmt.Sprintf("/proc/%d/stat", pid)
	f, err := statFields(path)
	if err != nil {
		return 0, err
	}
	// The state is field 3, so utime (14) and stime (15) are f[11], f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("%s: %d fields after the name", path, len(f))
	}
	var sum int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %v", path, err)
		}
		sum += n
	}
	return sum, nil
}

// statFields are the fields of a /proc stat file after the command name,
// the state first. The name is in parentheses and may itself hold spaces
// or parentheses, so the fields start after the last ')'.
func statFields(path string) ([][]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("%s: no ')' in %q", path, b)
	}
	return bytes.Fields(b[i+1:]), nil
}
