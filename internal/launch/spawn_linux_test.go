package launch

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
)

// Pdeathsig fires when the thread that forked the child exits. A child
// started by StartCommand from a goroutine whose thread then ends (a
// goroutine that exits locked takes its thread with it) must live on:
// launch forks from its own locked thread, never the caller's.
func TestStartCommandOutlivesTheCallersThread(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	// The main thread never exits (the runtime parks it instead), so the
	// caller must run on another: a goroutine that finds itself on the
	// main thread stays locked to it until the test ends, and the next
	// one runs elsewhere.
	type started struct {
		tid  int
		main bool
		err  error
	}
	release := make(chan struct{})
	defer close(release)
	var s started
	for range 2 {
		c := make(chan started, 1)
		go func() {
			runtime.LockOSThread()
			if syscall.Gettid() == syscall.Getpid() {
				c <- started{main: true}
				<-release
				runtime.UnlockOSThread()
				return
			}
			// Never unlocked: the thread ends with this goroutine.
			c <- started{tid: syscall.Gettid(), err: StartCommand(cmd)}
		}()
		if s = <-c; !s.main {
			break
		}
	}
	if s.main || s.err != nil {
		t.Fatalf("started on the main thread only, or failed: %+v", s)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); <-exited })
	task := fmt.Sprintf("/proc/self/task/%d", s.tid)
	poll.Until(t, 10*time.Second, "the caller's thread to end", func() bool {
		_, err := os.Stat(task)
		return os.IsNotExist(err)
	})
	// The signal is sent as the thread exits; a child it hit is reaped
	// within moments. Nothing to poll for: the child must stay.
	select {
	case <-exited:
		t.Fatalf("the child died with the thread that asked for it: %v", cmd.ProcessState)
	case <-time.After(500 * time.Millisecond):
	}
}
