package web_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// The browser test runs in a network namespace of its own when it can
// (root, unshare and ip present): Chromium aborts requests in flight
// whenever the machine's network configuration changes
// (ERR_NETWORK_CHANGED, then closed sockets), and other tests running
// beside this one (jepsen/nemesis) add and remove network namespaces and
// veth links all the time. In a namespace holding only its own loopback
// the cluster, node and Chromium see none of that.
const (
	netnsEnv  = "SEQSVR_WEB_NETNS"  // set in the re-executed test
	binDirEnv = "SEQSVR_WEB_BINDIR" // the binaries the parent built
)

// isolate re-runs TestBrowser inside a new network namespace and reports
// true when it did (the caller returns; the child's verdict is this
// test's). It returns false when already inside one, or when it cannot
// make one: then the test runs here, and tolerates ERR_NETWORK_CHANGED.
func isolate(t *testing.T) bool {
	t.Helper()
	if os.Getenv(netnsEnv) != "" {
		return false
	}
	unshare, err1 := exec.LookPath("unshare")
	ip, err2 := exec.LookPath("ip")
	if os.Geteuid() != 0 || err1 != nil || err2 != nil {
		t.Logf("running in the machine's network namespace (root %v, unshare %v, ip %v): network changes made by other tests may drop requests", os.Geteuid() == 0, err1, err2)
		return false
	}
	// A container may deny namespaces even to root: probe first.
	if out, err := exec.Command(unshare, "--net", "--", ip, "link", "set", "lo", "up").CombinedOutput(); err != nil {
		t.Logf("running in the machine's network namespace: cannot make one (%v: %s); network changes made by other tests may drop requests", err, strings.TrimSpace(string(out)))
		return false
	}
	bins := launchtest.BinDir(t)
	args := []string{"--net", "--", "sh", "-c", `"$0" link set lo up && exec "$@"`, ip, os.Args[0],
		"-test.run", "^TestBrowser$", "-test.count", "1", "-test.v", "-test.timeout", "5m"}
	if *shots != "" {
		args = append(args, "-screenshots", *shots)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, args...)
	cmd.Env = append(os.Environ(), netnsEnv+"=1", binDirEnv+"="+bins)
	out, err := cmd.CombinedOutput()
	// The child's own log, minus its framing lines.
	var keep []string
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		if !strings.HasPrefix(l, "=== RUN") && l != "PASS" && l != "FAIL" && !strings.HasPrefix(l, "ok ") {
			keep = append(keep, l)
		}
	}
	t.Logf("in a network namespace of its own:\n%s", strings.Join(keep, "\n"))
	if err != nil {
		t.Fatalf("the browser test in its network namespace failed: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestBrowser") {
		t.Fatal("the browser test in its network namespace did not report a pass")
	}
	return true
}

// binDir is the parent's binaries in the child, else a fresh build.
func binDir(t *testing.T) string {
	if d := os.Getenv(binDirEnv); d != "" {
		return d
	}
	return launchtest.BinDir(t)
}
