package launch

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
)

// TestWaitStopped: after SIGSTOP every thread of a busy process reads as
// stopped, and after SIGCONT none does.
func TestWaitStopped(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	if allStopped(pid) {
		t.Fatal("a running process reads as stopped")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	waitStopped(pid)
	if !allStopped(pid) {
		t.Fatal("not stopped after waitStopped")
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 5*time.Second, "the process to run again after SIGCONT", func() bool { return !allStopped(pid) })
}

// CPUTicks of this process grows while it spins for a while, and a
// process that does not exist is an error.
func TestCPUTicks(t *testing.T) {
	before, err := CPUTicks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spin until the process used 100 ms of CPU by its own account
	// (getrusage), not for a wall-clock time: on a loaded box 200 ms of
	// wall clock once gave the spinner less than a tick ("253 -> 253").
	// 100 ms is about 10 ticks at USER_HZ 100.
	start := cpuTime(t)
	x := 0
	for end := time.Now().Add(time.Minute); cpuTime(t)-start < 100*time.Millisecond; x++ {
		if time.Now().After(end) {
			t.Fatalf("did not get 100 ms of CPU in a minute (%d loops)", x)
		}
		for range 10000 {
			x++
		}
	}
	after, err := CPUTicks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after <= before {
		t.Errorf("ticks %d -> %d after spinning for %v of CPU (%d loops)", before, after, cpuTime(t)-start, x)
	}
	if _, err := CPUTicks(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}

// cpuTime is the user and system CPU time this process used.
func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
