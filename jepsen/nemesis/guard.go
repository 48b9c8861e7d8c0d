package nemesis

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
)

// guardScript waits for its stdin to reach EOF, which happens when the
// harness process ends by any means (return, panic, test timeout,
// SIGKILL), since the harness holds the only write end of the pipe; then
// it deletes the namespaces and links named in its arguments.
const guardScript = `cat >/dev/null
for a in "$@"; do
  case $a in
    netns:*) ip netns del "${a#netns:}" ;;
    link:*) ip link del "${a#link:}" ;;
  esac
done 2>/dev/null
exit 0`

// guard is a cleanup process that outlives the harness: its own session
// (a terminal's Ctrl-C or a signal to our process group does not reach
// it) and no parent-death signal.
type guard struct {
	cmd  *exec.Cmd
	w    *os.File
	once sync.Once
}

func startGuard(objs []string) (*guard, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("sh", append([]string{"-c", guardScript, "seqsvr-jepsen-netns-guard"}, objs...)...)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return nil, fmt.Errorf("nemesis: start the namespace cleanup guard: %w", err)
	}
	r.Close() // the guard holds the read end now
	return &guard{cmd: cmd, w: w}, nil
}

// disarm lets the guard run (its deletions find nothing left after Close)
// and reaps it.
func (g *guard) disarm() {
	g.once.Do(func() {
		g.w.Close()
		_ = g.cmd.Wait()
	})
}
