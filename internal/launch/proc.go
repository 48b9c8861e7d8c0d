package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Kind says which binary a Proc runs.
type Kind string

const (
	KindStore Kind = "storesvr"
	KindAlloc Kind = "allocsvr"
)

// ErrNotRunning is returned by signals sent to a stopped Proc.
var ErrNotRunning = errors.New("cluster: process not running")

// Proc is one server process that can be started, killed, paused and
// restarted with the same identity, addresses and data directory.
type Proc struct {
	Name     string
	Kind     Kind
	NodeID   string
	HTTPAddr string
	RaftAddr string // stores only
	DataDir  string
	LogPath  string
	Binary   string

	// Peers (--peers) or Join (--join) for stores; Join wins when set.
	Peers string
	Join  string
	// Stores is the --store list for allocsvrs.
	Stores []string
	// Env is added to the launcher's environment (after Options.Env).
	Env []string
	// ExtraArgs go after the contract flags.
	ExtraArgs []string
	// Wrap is a command prefix, e.g. ["ip", "netns", "exec", "ns1"].
	Wrap []string
	// TLS: the process serves HTTPS (Options.Security); allocsvrs then
	// advertise an https:// URL to each other.
	TLS bool
	// Ordinal (stores) is the StatefulSet mode's --ordinal-domain: the
	// process derives its node ID, addresses and --peers from its
	// hostname (NodeID, through HostnameEnv) instead of being given them;
	// OrdinalInitial is --ordinal-initial. Join, when set, wins.
	Ordinal        string
	OrdinalInitial int
	// JoinTokenFile (stores, secure mode) is passed as --join-token-file,
	// with --join or --peers: joining a cluster with auth needs role
	// admin, and a member's own calls to the others that carry no
	// caller's token (the join, and the version poll the cluster version
	// waits for) present it.
	JoinTokenFile string

	logf func(string, ...any)

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{}
	exitErr error
	starts  int
	paused  bool
}

// URL is the process's base URL (https:// in the secure mode).
func (p *Proc) URL() string {
	if p.TLS {
		return "https://" + p.HTTPAddr
	}
	return "http://" + p.HTTPAddr
}

// Args is the full argument list (without the binary or Wrap).
func (p *Proc) Args() []string {
	args := []string{"--node-id", p.NodeID, "--http-addr", p.HTTPAddr, "--data-dir", p.DataDir}
	switch p.Kind {
	case KindStore:
		args = append(args, "--raft-addr", p.RaftAddr)
		if p.Ordinal != "" && p.Join == "" {
			// Only the ports of --http-addr and --raft-addr count.
			args = append(args[2:], "--ordinal-domain", p.Ordinal, "--ordinal-initial", strconv.Itoa(p.OrdinalInitial))
		} else if p.Join != "" {
			args = append(args, "--join", p.Join)
		} else if p.Peers != "" {
			args = append(args, "--peers", p.Peers)
		}
		if p.JoinTokenFile != "" {
			args = append(args, "--join-token-file", p.JoinTokenFile)
		}
	case KindAlloc:
		args = append(args, "--store", joinComma(p.Stores))
		if p.TLS {
			// The default advertised URL is http://; allocsvrs forward
			// per-key calls to each other through it.
			args = append(args, "--advertise-url", p.URL())
		}
	}
	return append(args, p.ExtraArgs...)
}

func joinComma(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += ","
		}
		out += v
	}
	return out
}

// Start launches the process if it is not running. It does not wait for
// readiness (see Cluster.WaitReady).
func (p *Proc) Start(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd != nil {
		return nil
	}
	if err := os.MkdirAll(p.DataDir, 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p.LogPath), 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(p.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	argv := append(append([]string{}, p.Wrap...), p.Binary)
	argv = append(argv, p.Args()...)
	// Not CommandContext: the process must outlive the ctx of the call
	// that started it; Kill/Close end it.
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), p.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	p.starts++
	fmt.Fprintf(logf, "=== cluster: start #%d of %s at %s: %v\n", p.starts, p.Name, time.Now().Format(time.RFC3339Nano), argv)
	if err := StartCommand(cmd); err != nil {
		logf.Close()
		return fmt.Errorf("cluster: start %s: %w", p.Name, err)
	}
	done := make(chan struct{})
	p.cmd, p.done, p.paused, p.exitErr = cmd, done, false, nil
	go func() {
		err := cmd.Wait()
		fmt.Fprintf(logf, "=== cluster: %s exited at %s: %v\n", p.Name, time.Now().Format(time.RFC3339Nano), err)
		logf.Close()
		p.mu.Lock()
		if p.cmd == cmd {
			p.cmd, p.exitErr = nil, err
		}
		p.mu.Unlock()
		close(done)
	}()
	p.log("started %s pid %d", p.Name, cmd.Process.Pid)
	return nil
}

func (p *Proc) log(format string, args ...any) {
	if p.logf != nil {
		p.logf(format, args...)
	}
}

// Running reports whether the process is alive (possibly paused).
func (p *Proc) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil
}

// Paused reports whether the process was stopped with Pause.
func (p *Proc) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cmd != nil && p.paused
}

// Starts counts how many times the process was started; it numbers the
// process lifetimes.
func (p *Proc) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// Pid of the running process, or 0.
func (p *Proc) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// ExitErr is the wait status of the last exit.
func (p *Proc) ExitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitErr
}

// Signal sends sig to the process group.
func (p *Proc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.signalLocked(sig)
}

func (p *Proc) signalLocked(sig syscall.Signal) error {
	if p.cmd == nil {
		return ErrNotRunning
	}
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("cluster: signal %v to %s: %w", sig, p.Name, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		waitStopped(pid)
		p.paused = true
	case syscall.SIGCONT:
		p.paused = false
	}
	return nil
}

// Kill sends SIGKILL and waits for the exit. Killing a stopped Proc is a
// no-op.
func (p *Proc) Kill() error {
	p.mu.Lock()
	done := p.done
	err := p.signalLocked(syscall.SIGKILL)
	p.mu.Unlock()
	if errors.Is(err, ErrNotRunning) {
		return nil
	}
	if err != nil {
		return err
	}
	<-done
	p.log("killed %s", p.Name)
	return nil
}

// Stop sends SIGTERM (after SIGCONT, in case it is paused) and waits up to
// 10 s for a clean exit, then kills it.
func (p *Proc) Stop() error {
	p.mu.Lock()
	done := p.done
	if p.cmd == nil {
		p.mu.Unlock()
		return nil
	}
	_ = p.signalLocked(syscall.SIGCONT)
	err := p.signalLocked(syscall.SIGTERM)
	p.mu.Unlock()
	if err != nil {
		return err
	}
	select {
	case <-done:
		p.log("stopped %s", p.Name)
		return nil
	case <-time.After(10 * time.Second):
		p.log("%s ignored SIGTERM for 10s; killing", p.Name)
		return p.Kill()
	}
}

// Pause freezes the process group with SIGSTOP.
func (p *Proc) Pause() error { return p.Signal(syscall.SIGSTOP) }

// Resume continues a paused process with SIGCONT.
func (p *Proc) Resume() error { return p.Signal(syscall.SIGCONT) }

// Restart kills the process if it runs and starts it again.
func (p *Proc) Restart(ctx context.Context) error {
	if err := p.Kill(); err != nil {
		return err
	}
	return p.Start(ctx)
}

// Wipe deletes the data directory; the process must not be running.
func (p *Proc) Wipe() error {
	if p.Running() {
		return fmt.Errorf("cluster: wipe %s while running", p.Name)
	}
	err := os.RemoveAll(p.DataDir)
	if errors.Is(err, syscall.EBUSY) {
		// A mount point (Options.DataDirTmpfs): its contents are gone,
		// and it stays, empty.
		return nil
	}
	return err
}
