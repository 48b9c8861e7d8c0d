package nemesis

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
)

const crashChildEnv = "NEMESIS_NET_CRASH_CHILD"

// TestNetCleanedAfterSIGKILL: a harness process killed without running
// any cleanup of its own still leaves no namespace or link behind.
func TestNetCleanedAfterSIGKILL(t *testing.T) {
	if os.Getenv(crashChildEnv) != "" {
		crashChild()
		return
	}
	if err := NetAvailable(); err != nil {
		t.Skipf("network namespaces unavailable: %v", err)
	}
	t.Cleanup(cleanStale)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestNetCleanedAfterSIGKILL$")
	cmd.Env = append(os.Environ(), crashChildEnv+"=1")
	out, err := cmd.Output()
	ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die of SIGKILL: %v\n%s", err, out)
	}
	var prefix string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "created "); ok {
			prefix = p
		}
	}
	if prefix == "" {
		t.Fatalf("child did not create its namespaces:\n%s", out)
	}
	poll.UntilOK(t, 10*time.Second, "the namespaces gone after the harness died", func() error {
		if left := leftovers(prefix); len(left) > 0 {
			return fmt.Errorf("still present: %v", left)
		}
		return nil
	})
}

// crashChild makes a Net, proves it exists, and dies by SIGKILL.
func crashChild() {
	n, err := NewNet([]string{"x1", "x2"})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	if len(leftovers(n.prefix)) != 3 {
		fmt.Println("namespaces or bridge missing:", leftovers(n.prefix))
		os.Exit(3)
	}
	fmt.Println("created " + n.prefix)
	os.Stdout.Sync()
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// leftovers lists the namespaces and the bridge of prefix still present.
func leftovers(prefix string) []string {
	var left []string
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], prefix) {
			left = append(left, f[0])
		}
	}
	if exec.Command("ip", "link", "show", prefix+"b").Run() == nil {
		left = append(left, prefix+"b")
	}
	return left
}
