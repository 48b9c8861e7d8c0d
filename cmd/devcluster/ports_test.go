package main

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// fakeServerEnv makes this test binary a stand-in for storesvr in
// TestCheckOwn: it listens on its --http-addr when the variable says
// "listen", and only sleeps when it says "sleep".
const fakeServerEnv = "DEVCLUSTER_TEST_FAKE_SERVER"

func TestMain(m *testing.M) {
	switch os.Getenv(fakeServerEnv) {
	case "":
		os.Exit(m.Run())
	case "listen":
		for i, a := range os.Args {
			if a == "--http-addr" && i+1 < len(os.Args) {
				if _, err := net.Listen("tcp", os.Args[i+1]); err != nil {
					os.Exit(3)
				}
			}
		}
	}
	time.Sleep(time.Hour)
}

// listen holds a port on loopback for the test's life.
func listen(t *testing.T) (net.Listener, int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l, l.Addr().(*net.TCPAddr).Port
}

func TestPortHolders(t *testing.T) {
	_, port := listen(t)
	hs := portHolders("/proc", port)
	if len(hs) == 0 {
		if _, err := os.Stat("/proc/net/tcp"); err != nil {
			t.Skip("no /proc/net/tcp here")
		}
		t.Fatalf("port %d: no holder found", port)
	}
	if hs[0].Pid != os.Getpid() || hs[0].Name == "" {
		t.Errorf("port %d held by %v, want pid %d with its name", port, hs, os.Getpid())
	}
	// A port nobody listens on has no holder.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	free := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if hs := portHolders("/proc", free); len(hs) != 0 {
		t.Errorf("closed port %d held by %v", free, hs)
	}
}

// TestPortHoldersFakeProc reads a made-up /proc: the LISTEN socket of
// port 8081 (0x1F91) is inode 4242, open in pid 77 only; 8082 is there
// but not listening.
func TestPortHoldersFakeProc(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("net/tcp", "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"+
		"   0: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0\n"+
		"   1: 0100007F:1F92 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 4343 1 0000000000000000 20 4 30 10 -1\n")
	write("77/comm", "storesvr\n")
	write("78/comm", "other\n")
	for pid, inode := range map[string]string{"77": "4242", "78": "4343"} {
		if err := os.MkdirAll(filepath.Join(root, pid, "fd"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("socket:["+inode+"]", filepath.Join(root, pid, "fd", "3")); err != nil {
			t.Fatal(err)
		}
	}
	if hs := portHolders(root, 8081); len(hs) != 1 || hs[0] != (holder{77, "storesvr"}) {
		t.Errorf("port 8081: %v, want pid 77 (storesvr)", hs)
	}
	if hs := portHolders(root, 8082); len(hs) != 0 {
		t.Errorf("port 8082 (not listening): %v", hs)
	}
}

func TestCheckPorts(t *testing.T) {
	_, busy := listen(t)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	free := ln.Addr().String()
	ln.Close()
	busyAddr := "127.0.0.1:" + strconv.Itoa(busy)
	if err := checkPorts("/proc", []string{free}); err != nil {
		t.Fatalf("free port: %v", err)
	}
	err := checkPorts("/proc", []string{free, busyAddr})
	if !errors.Is(err, errPortBusy) || !strings.Contains(err.Error(), busyAddr+", held by pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("busy port: %v, want %s held by this process", err, busyAddr)
	}
}

// TestDevclusterRefusesBusyPort runs devcluster with its first store's
// HTTP port held here: it must exit non-zero at once, naming the port and
// this process, without starting anything.
func TestDevclusterRefusesBusyPort(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs devcluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := t.TempDir()
	if err := launch.BuildPackages(ctx, bin, []string{launch.BaseTag}, "./cmd/devcluster"); err != nil {
		t.Fatal(err)
	}
	_, port := listen(t)
	base := func() string {
		p, err := launch.FreePort("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		return strconv.Itoa(p)
	}
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "devcluster"), "-bin", t.TempDir(), "-dir", dir, "-stores", "1",
		"-store-http-base", strconv.Itoa(port-1), "-store-raft-base", base(), "-alloc-http-base", base())
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("devcluster with port %d busy: %v, want a non-zero exit\n%s", port, err, out)
	}
	want := "127.0.0.1:" + strconv.Itoa(port) + ", held by pid " + strconv.Itoa(os.Getpid())
	if !strings.Contains(string(out), want) || strings.Contains(string(out), "seqsvr is up") {
		t.Fatalf("devcluster output:\n%s\nwant %q and no \"seqsvr is up\"", out, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "logs")); err == nil {
		t.Errorf("devcluster started processes (logs under %s) although a port was busy", dir)
	}
}

// TestCheckOwn starts stand-in processes: one that listens on its own
// HTTP port passes; one whose port is held here while it runs fails,
// naming this process; one that exited fails.
func TestCheckOwn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs processes")
	}
	bin := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"storesvr", "allocsvr"} {
		if err := os.Symlink(self, filepath.Join(bin, b)); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(mode string) *launch.Cluster {
		t.Helper()
		c, err := launch.New(launch.Options{BinDir: bin, Dir: t.TempDir(), Stores: 1, Env: []string{fakeServerEnv + "=" + mode}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}

	own := start("listen")
	if err := own.Stores[0].Start(ctx); err != nil {
		t.Fatal(err)
	}
	_, portStr, _ := net.SplitHostPort(own.Stores[0].HTTPAddr)
	port, _ := strconv.Atoi(portStr)
	poll.Until(t, 30*time.Second, "the stand-in listens on its port", func() bool { return len(portHolders("/proc", port)) > 0 })
	if err := checkOwn("/proc", own); err != nil {
		t.Errorf("own process on its port: %v", err)
	}

	other := start("sleep")
	l, err := net.Listen("tcp", other.Stores[0].HTTPAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := other.Stores[0].Start(ctx); err != nil {
		t.Fatal(err)
	}
	err = checkOwn("/proc", other)
	if !errors.Is(err, errPortBusy) || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("port held by another process: %v, want errPortBusy naming pid %d", err, os.Getpid())
	}

	if err := other.Stores[0].Kill(); err != nil {
		t.Fatal(err)
	}
	if err := checkOwn("/proc", other); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("exited process: %v", err)
	}
}
