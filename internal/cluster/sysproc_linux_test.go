package cluster

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
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
	for deadline := time.Now().Add(5 * time.Second); allStopped(pid); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still stopped after SIGCONT")
		}
	}
}
