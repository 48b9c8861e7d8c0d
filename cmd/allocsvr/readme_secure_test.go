package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// readmeMarker precedes the secure walk-through block of docs/security.md.
const readmeMarker = "<!-- secure-walkthrough:"

// TestReadmeSecureWalkthrough runs the shell block of docs/security.md's
// "The walk-through in one block" (the README links to it) with bash, as
// a user pasting it would, and checks what it
// prints: certificates from openssl, 3 storesvrs and an allocsvr with
// tokens, HTTPS and Raft over mutual TLS, curl and grpcurl calls, the two
// refusals, and the final kill. Two things differ from a user's run: the
// first line's `make build grpcurl &&` is dropped (../bin holds this
// test's binaries, ../.tools/bin the grpcurl `make grpcurl` installed),
// and the fixed ports 808x and 700x become free ones below the kernel's
// ephemeral range, so the test can run beside others.
func TestReadmeSecureWalkthrough(t *testing.T) {
	launchtest.SkipShort(t)
	for _, tool := range []string{"bash", "openssl", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	grpcurl, err := filepath.Abs("../../.tools/bin/grpcurl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(grpcurl); err != nil {
		if os.Getenv("CI") != "" { // make test installs it: a skip there hides a broken walk-through
			t.Fatalf("no grpcurl under CI: %v", err)
		}
		t.Skipf("no grpcurl (make grpcurl installs it; make test does first): %v", err)
	}
	readme, err := os.ReadFile("../../docs/security.md")
	if err != nil {
		t.Fatal(err)
	}
	script, err := secureBlock(string(readme))
	if err != nil {
		t.Fatal(err)
	}
	const first = "make build grpcurl && "
	if !strings.HasPrefix(script, first) {
		t.Fatalf("the block no longer starts with %q", first)
	}
	script = strings.TrimPrefix(script, first)
	for _, prefix := range []string{"127.0.0.1:808", "127.0.0.1:700"} {
		if !strings.Contains(script, prefix) {
			t.Fatalf("the block has no %s ports", prefix)
		}
		script = strings.ReplaceAll(script, prefix, "127.0.0.1:"+freePortPrefix(t))
	}

	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".tools", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	for link, target := range map[string]string{
		filepath.Join(root, "bin"):                      launchtest.BinDir(t),
		filepath.Join(root, ".tools", "bin", "grpcurl"): grpcurl,
	} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir = root
	// Its own process group: what the script started in the background
	// is killed with it if it fails before its last line.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	if err != nil {
		t.Fatalf("the walk-through failed: %v\nstdout:\n%s\nstderr:\n%s\n%s", err, stdout.String(), stderr.String(), logs(root))
	}
	// protojson varies its spacing: compare without white space, in order.
	got := strings.Join(strings.Fields(stdout.String()), "")
	for _, want := range []string{
		"ok",
		`{"tag":"order","step":"1000",`,
		`{"ids":["1","2","3"]}`,
		"4",
		`{"ids":["5","6"]}`,
		"missingbearertoken",
		`"code":"permission_denied"`,
	} {
		i := strings.Index(got, want)
		if i < 0 {
			t.Fatalf("output lacks %s (in order) in:\n%s\n%s", want, stdout.String(), logs(root))
		}
		got = got[i+len(want):]
	}
}

// secureBlock is the shell block after readmeMarker.
func secureBlock(readme string) (string, error) {
	_, rest, ok := strings.Cut(readme, readmeMarker)
	if !ok {
		return "", errors.New("docs/security.md has no " + readmeMarker + " marker")
	}
	_, rest, ok = strings.Cut(rest, "```sh\n")
	if !ok {
		return "", errors.New("no ```sh block after the marker")
	}
	block, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		return "", errors.New("the block after the marker is not closed")
	}
	return block, nil
}

// freePortPrefix is a 4-digit P with ports P0 to P9 all free now, in
// 20000-32759: below the ephemeral range other tests' :0 ports come from.
func freePortPrefix(t *testing.T) string {
	t.Helper()
	for range 100 {
		p := 2000 + rand.IntN(1276)
		free := true
		for d := range 10 {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p*10+d))
			if err != nil {
				free = false
				break
			}
			l.Close()
		}
		if free {
			return strconv.Itoa(p)
		}
	}
	t.Fatal("no free block of 10 ports")
	return ""
}

// logs is every process log the walk-through wrote, for a failure.
func logs(root string) string {
	var b strings.Builder
	paths, _ := filepath.Glob(filepath.Join(root, "secure", "*.log"))
	for _, p := range paths {
		body, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "--- %s\n%s", filepath.Base(p), body)
	}
	return b.String()
}
