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
	x := 0
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		x++
	}
	after, err := CPUTicks(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// 200 ms of spinning is about 20 ticks at USER_HZ 100; a loaded box
	// gives the spinner less, never none.
	if after <= before {
		t.Errorf("ticks %d -> %d after spinning (%d loops)", before, after, x)
	}
	if _, err := CPUTicks(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}
