package launch

import (
	"os/exec"
	"runtime"
	"sync"
)

// Pdeathsig fires when the OS thread that forked the child exits, not the
// process. Go may retire threads, so every child is forked from one
// goroutine locked to its thread for the life of the process.
var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

// StartCommand starts cmd as launch starts its own processes: in a
// process group of its own and, on Linux, killed by SIGKILL when this
// process dies (Pdeathsig), forked from the one locked thread so that
// the signal cannot come early. For a caller with processes of its own
// (benchpeers' peers), so that every process of a run is launched one
// way.
func StartCommand(cmd *exec.Cmd) error {
	cmd.SysProcAttr = sysProcAttr()
	return spawn(cmd)
}

func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as we do
			for r := range spawnCh {
				r.done <- r.cmd.Start()
			}
		}()
	})
	r := spawnReq{cmd: cmd, done: make(chan error, 1)}
	spawnCh <- r
	return <-r.done
}
