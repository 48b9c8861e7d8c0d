package doctest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
)

// scriptTimeout bounds a block that runs to its end.
const scriptTimeout = 30 * time.Second

// script is one bash run of a block, in its own process group: what it
// starts in the background stays in that group, which the test's cleanup
// kills.
type script struct {
	name, out, err string // the name, the stdout and stderr files
	done           chan struct{}
	exit           error
	pgid           int
	jobs           []int        // the PIDs startBackground read
	stopped        map[int]bool // jobs the test stopped on purpose
}

// start runs body with bash -e -o pipefail in s.root, stdout and stderr
// into files under logs/ (not pipes: a background process keeps a pipe
// open after bash exits). The environment is the test's without any
// SEQCTL_ variable, so only what the block sets applies.
func (s *site) start(name, body string) *script {
	s.t.Helper()
	sc := &script{
		name: name,
		out:  filepath.Join(s.root, "logs", name+".out"),
		err:  filepath.Join(s.root, "logs", name+".err"),
		done: make(chan struct{}),
	}
	if err := os.WriteFile(filepath.Join(s.root, "logs", name+".sh"), []byte(body), 0o644); err != nil {
		s.t.Fatal(err)
	}
	stdout, err := os.Create(sc.out)
	if err != nil {
		s.t.Fatal(err)
	}
	defer stdout.Close()
	stderr, err := os.Create(sc.err)
	if err != nil {
		s.t.Fatal(err)
	}
	defer stderr.Close()
	cmd := exec.Command("bash", "-e", "-o", "pipefail", "-c", body)
	cmd.Dir = s.root
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SEQCTL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	sc.pgid = pgid
	go func() {
		sc.exit = cmd.Wait()
		close(sc.done)
	}()
	s.t.Cleanup(func() {
		// The processes a block left in the background first: bash,
		// waiting for them, reaps them and ends (the group's SIGKILL
		// would orphan them instead, and a zombie nobody reaps stays in
		// the group). Then the group, for whatever is left.
		for _, pid := range sc.jobs {
			// Only while it is still one of the group's: a PID the
			// test stopped may belong to another process by now.
			if g, err := syscall.Getpgid(pid); err == nil && g == pgid {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if len(sc.jobs) > 0 {
			select {
			case <-sc.done:
			case <-time.After(5 * time.Second):
			}
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-sc.done:
		case <-time.After(10 * time.Second):
			s.t.Errorf("%s: bash did not end after SIGKILL", name)
		}
	})
	return sc
}

// run runs body to its end and returns its stdout; a failure (or more
// than scriptTimeout) fails the test with both outputs.
func (s *site) run(name, body string) string {
	s.t.Helper()
	sc := s.start(name, body)
	select {
	case <-sc.done:
	case <-time.After(scriptTimeout):
		s.t.Fatalf("%s: still running after %v\n%s", name, scriptTimeout, s.outputs(sc))
	}
	if sc.exit != nil {
		s.t.Fatalf("%s: %v\n%s", name, sc.exit, s.outputs(sc))
	}
	out, err := os.ReadFile(sc.out)
	if err != nil {
		s.t.Fatal(err)
	}
	return string(out)
}

// startBackground runs a block whose commands leave processes running in
// the background (`cmd &`): it returns their PIDs, in the order the block
// started them, once the block's last line has run. Bash then waits for
// them, so a process the test stops is reaped at once.
func (s *site) startBackground(name, body string) []int {
	s.t.Helper()
	pids := filepath.Join(s.root, "logs", name+".pids")
	sc := s.start(name, body+"\njobs -p >"+pids+".tmp && mv "+pids+".tmp "+pids+"\nwait\n")
	var list []byte
	poll.UntilOK(s.t, scriptTimeout, name+" to start its processes", func() error {
		select {
		case <-sc.done:
			s.t.Fatalf("%s ended: %v\n%s", name, sc.exit, s.outputs(sc))
		default:
		}
		var err error
		list, err = os.ReadFile(pids)
		return err
	})
	var out []int
	for _, f := range strings.Fields(string(list)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			s.t.Fatalf("%s: jobs -p printed %q", name, list)
		}
		out = append(out, pid)
	}
	sc.jobs, sc.stopped = out, map[int]bool{}
	s.bg = append(s.bg, sc)
	s.t.Cleanup(func() {
		if s.t.Failed() {
			s.t.Logf("%s", s.outputs(sc))
		}
	})
	return out
}

// outputs is a script's stdout and the tail of its stderr (where the
// processes it started log), for a failure.
func (s *site) outputs(sc *script) string {
	out, _ := os.ReadFile(sc.out)
	errOut, _ := os.ReadFile(sc.err)
	const tail = 12000
	if len(errOut) > tail {
		errOut = append([]byte("...\n"), errOut[len(errOut)-tail:]...)
	}
	return fmt.Sprintf("--- %s stdout:\n%s\n--- %s stderr:\n%s", sc.name, out, sc.name, errOut)
}

// alive fails the test at once when a process a block started in the
// background has exited without the test stopping it (a flag the binary
// does not know, a refused start): a wait for what it should bring about
// would otherwise only time out.
func (s *site) alive() {
	s.t.Helper()
	for _, sc := range s.bg {
		for i, pid := range sc.jobs {
			if g, err := syscall.Getpgid(pid); !sc.stopped[pid] && (err != nil || g != sc.pgid) {
				s.t.Fatalf("%s: the process of its background command %d (PID %d) exited (its output follows)", sc.name, i+1, pid)
			}
		}
	}
}

// mayExit tells alive that pid, one of a startBackground block's
// processes, may end now.
func (s *site) mayExit(pid int) {
	for _, sc := range s.bg {
		if slices.Contains(sc.jobs, pid) {
			sc.stopped[pid] = true
		}
	}
}

// stop sends sig to pid, one of a startBackground block's processes, and
// waits until it has gone.
func (s *site) stop(pid int, sig syscall.Signal) {
	s.t.Helper()
	s.mayExit(pid)
	if err := syscall.Kill(pid, sig); err != nil {
		s.t.Fatalf("kill %d: %v", pid, err)
	}
	poll.UntilOK(s.t, 20*time.Second, fmt.Sprintf("process %d to exit on %v", pid, sig), func() error {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
}

// empty makes dir an empty directory, as a lost or wiped disk leaves it.
func (s *site) empty(dir string) {
	s.t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		s.t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		s.t.Fatal(err)
	}
}
