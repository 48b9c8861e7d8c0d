package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// lockedBuf collects a process's output while it runs.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	p, err := launch.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

// storesvrRun is one storesvr process started by a startup test.
type storesvrRun struct {
	cmd  *exec.Cmd
	out  *lockedBuf
	done chan error
	http string
}

// startStoresvr starts storesvr with args (plus --http-addr and
// --log-format text) and returns at once; the process is killed when the
// test ends.
func startStoresvr(t *testing.T, httpAddr string, args ...string) *storesvrRun {
	t.Helper()
	r := &storesvrRun{out: &lockedBuf{}, done: make(chan error, 1), http: httpAddr}
	r.cmd = exec.Command(filepath.Join(launchtest.BinDir(t), "storesvr"), append(args, "--http-addr", httpAddr)...)
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	// As launch starts every process: it dies with the test binary.
	if err := launch.StartCommand(r.cmd); err != nil {
		t.Fatal(err)
	}
	go func() { r.done <- r.cmd.Wait() }()
	t.Cleanup(func() {
		_ = r.cmd.Process.Kill()
		<-r.done
	})
	return r
}

// exit waits for the process to end by itself within d and returns its
// output; a process still running after d fails the test.
func (r *storesvrRun) exit(t *testing.T, d time.Duration) string {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("storesvr ended with %v, want a non-zero exit\n%s", err, r.out)
		}
		return r.out.String()
	case <-time.After(d):
		t.Fatalf("storesvr still running after %v, want it to exit\n%s", d, r.out)
	}
	return ""
}

// ready waits until the process answers /readyz 200 and serves CreateTag.
func (r *storesvrRun) ready(t *testing.T, ctx context.Context, tag string) {
	t.Helper()
	poll.UntilCtx(ctx, t, "storesvr ready", func() bool {
		res, err := http.Get("http://" + r.http + "/readyz")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	cl := seqsvrv1connect.NewStoreServiceClient(http.DefaultClient, "http://"+r.http)
	if _, err := cl.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: tag})); err != nil {
		t.Fatalf("CreateTag on %s: %v\n%s", r.http, err, r.out)
	}
}

// stop ends the process with SIGTERM and waits for it.
func (r *storesvrRun) stop(t *testing.T) string {
	t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-r.done:
		r.done <- err
	case <-time.After(15 * time.Second):
		t.Fatalf("storesvr did not stop on SIGTERM\n%s", r.out)
	}
	return r.out.String()
}

// Without --peers, --join or --bootstrap, an empty data dir is an error
// that says which flag to pass; nothing is written that a later start
// would take for a cluster.
func TestStartWithoutPeersJoinOrBootstrapExits(t *testing.T) {
	launchtest.SkipShort(t)
	dir := t.TempDir()
	r := startStoresvr(t, freeAddr(t), "--node-id", "s1", "--raft-addr", freeAddr(t), "--data-dir", dir)
	out := r.exit(t, 15*time.Second)
	for _, want := range []string{dir, "--peers", "--join", "--bootstrap"} {
		if !strings.Contains(out, want) {
			t.Errorf("exit message lacks %q:\n%s", want, out)
		}
	}
	// Still refused the second time: the failed start left no state.
	r = startStoresvr(t, freeAddr(t), "--node-id", "s1", "--raft-addr", freeAddr(t), "--data-dir", dir)
	if out := r.exit(t, 15*time.Second); !strings.Contains(out, "--bootstrap") {
		t.Fatalf("second start:\n%s", out)
	}
}

// --bootstrap starts a one-member cluster; a restart finds its state and
// needs no flag; a restart whose flags contradict the state is refused
// (another node ID) or warned about, naming what differs (raft address,
// peers), and then runs on the stored state.
func TestBootstrapAndRestartAgainstStoredState(t *testing.T) {
	launchtest.SkipShort(t)
	ctx := launchtest.Context(t, 90*time.Second)
	dir := t.TempDir()
	raftAddr := freeAddr(t)

	r := startStoresvr(t, freeAddr(t), "--node-id", "s1", "--raft-addr", raftAddr, "--data-dir", dir, "--bootstrap")
	r.ready(t, ctx, "first")
	r.stop(t)

	// A plain restart: existing state, no flag needed, no warning.
	r = startStoresvr(t, freeAddr(t), "--node-id", "s1", "--raft-addr", raftAddr, "--data-dir", dir)
	r.ready(t, ctx, "second")
	if out := r.stop(t); strings.Contains(out, "level=WARN") && strings.Contains(out, "stored") {
		t.Fatalf("a restart with the stored flags warned:\n%s", out)
	}

	// Another node ID: this directory is not its state.
	r = startStoresvr(t, freeAddr(t), "--node-id", "s9", "--raft-addr", raftAddr, "--data-dir", dir)
	out := r.exit(t, 15*time.Second)
	for _, want := range []string{"--node-id", "s9", "belongs to member", "s1", dir} {
		if !strings.Contains(out, want) {
			t.Errorf("node-id conflict message lacks %q:\n%s", want, out)
		}
	}

	// Another raft address: a WARN with both addresses, then it serves.
	other := freeAddr(t)
	r = startStoresvr(t, freeAddr(t), "--node-id", "s1", "--raft-addr", other, "--data-dir", dir)
	poll.UntilCtx(ctx, t, "raft address warning", func() bool { return strings.Contains(r.out.String(), "--raft-addr differs") })
	out = r.stop(t)
	for _, want := range []string{"level=WARN", "flag_raft_addr=" + other, "stored_raft_addr=" + raftAddr} {
		if !strings.Contains(out, want) {
			t.Errorf("raft address warning lacks %q:\n%s", want, out)
		}
	}

	// Another --peers list: a WARN naming each difference; the stored
	// one-member configuration is used, so the member leads alone.
	peers := fmt.Sprintf("s1=%s@%s,s2=%s@%s", raftAddr, freeAddr(t), freeAddr(t), freeAddr(t))
	r = startStoresvr(t, freeAddr(t), "--node-id", "s1", "--raft-addr", raftAddr, "--data-dir", dir, "--peers", peers)
	r.ready(t, ctx, "third")
	out = r.stop(t)
	for _, want := range []string{"level=WARN", "--peers differs", "s2=", "is in --peers but not a member", `stored="s1=` + raftAddr + `"`} {
		if !strings.Contains(out, want) {
			t.Errorf("peers warning lacks %q:\n%s", want, out)
		}
	}
}

// A second storesvr with the --node-id of a live member, joining with its
// own Raft address, is refused with failed_precondition ("node-id held by
// a live member") and exits; the live member keeps its address and serves.
func TestJoinWithLiveNodeIDExits(t *testing.T) {
	launchtest.SkipShort(t)
	ctx := launchtest.Context(t, 90*time.Second)
	raftAddr := freeAddr(t)
	r := startStoresvr(t, freeAddr(t), "--node-id", "s1", "--raft-addr", raftAddr, "--data-dir", t.TempDir(), "--bootstrap")
	r.ready(t, ctx, "first")

	twin := startStoresvr(t, freeAddr(t), "--node-id", "s1", "--raft-addr", freeAddr(t), "--data-dir", t.TempDir(), "--join", r.http)
	out := twin.exit(t, 30*time.Second)
	for _, want := range []string{"failed_precondition", "node-id held by a live member: s1 at Raft address " + raftAddr, "exiting"} {
		if !strings.Contains(out, want) {
			t.Errorf("twin's output lacks %q:\n%s", want, out)
		}
	}
	cl := seqsvrv1connect.NewStoreServiceClient(http.DefaultClient, "http://"+r.http)
	st, err := cl.ClusterStatus(ctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Msg.GetMembers(); len(m) != 1 || m[0].GetRaftAddr() != raftAddr || st.Msg.GetLeaderId() != "s1" {
		t.Fatalf("members after the refused twin: %v (leader %q)", m, st.Msg.GetLeaderId())
	}
	r.ready(t, ctx, "second")
}
