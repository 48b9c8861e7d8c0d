package deploy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

var (
	portMu    sync.Mutex
	portsUsed = map[int]bool{}
)

// freeAddr is a loopback address no earlier call returned. The kernel
// likes to offer a port it just saw closed again (CI once got the same
// port for a storesvr's --http-addr and --raft-addr three tries running),
// so a port handed out before is held bound while looking further.
func freeAddr(t *testing.T) string {
	t.Helper()
	portMu.Lock()
	defer portMu.Unlock()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range 1024 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		if !portsUsed[p] {
			l.Close()
			portsUsed[p] = true
			return l.Addr().String()
		}
		held = append(held, l)
	}
	t.Fatal("no unused free port on 127.0.0.1")
	return ""
}

// proc is a binary started by the test, its output in a file that a
// failed test prints: a probe that never answers 200 says why in the log.
type proc struct {
	bin    string
	log    string
	exited chan struct{} // closed when the process has exited
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 16<<10 {
		b = b[len(b)-16<<10:]
	}
	return string(b)
}

func startBin(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{bin: bin, log: filepath.Join(t.TempDir(), bin+".log"), exited: make(chan struct{})}
	out, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, bin), args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
		out.Close()
		if t.Failed() {
			t.Logf("%s log (tail):\n%s", bin, p.tail())
		}
	})
	return p
}

// startServing starts bin with the addresses addrs() picks and waits until
// url(addresses) answers 200. freeAddr closes its listener before the
// binary binds the port, so another process on the machine can take it in
// between: a start that exits on "address already in use" is tried again
// on new ports.
func startServing(t *testing.T, bin string, addrs func() []string, args func(a []string) []string, url func(a []string) string) []string {
	t.Helper()
	for try := 1; ; try++ {
		a := addrs()
		p := startBin(t, bin, args(a)...)
		err := waitStatus(p, url(a), http.StatusOK)
		if err == nil {
			return a
		}
		if try < 3 && strings.Contains(p.tail(), "address already in use") {
			t.Logf("%s: a port was taken before it bound it; again on new ports", bin)
			continue
		}
		t.Fatal(err)
	}
}

// waitStatus polls url until it answers want, and fails after a minute or
// when p exits.
func waitStatus(p *proc, url string, want int) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	last := "no answer"
	for {
		res, err := http.Get(url)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == want {
				return nil
			}
			last = res.Status
		} else {
			last = err.Error()
		}
		select {
		case <-p.exited:
			return fmt.Errorf("GET %s: %s, want %d; %s exited", url, last, want, p.bin)
		case <-ctx.Done():
			return fmt.Errorf("GET %s: %s, want %d", url, last, want)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// TestProbePathsServed runs a one-member store and an allocsvr and GETs
// every probe path and the ServiceMonitors' path the manifests use: each
// must answer 200 on the --http-addr port (TestStoresvrStatefulSet and
// TestAllocsvrDeployment check the manifests' ports against --http-addr).
func TestProbePathsServed(t *testing.T) {
	m := readManifests(t)
	paths := map[string]map[string]bool{"storesvr": {}, "allocsvr": {}}
	for _, c := range []corev1.Container{m.sets[0].Spec.Template.Spec.Containers[0], m.deploys[0].Spec.Template.Spec.Containers[0]} {
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
			if p != nil && p.HTTPGet != nil {
				paths[c.Command[0]][p.HTTPGet.Path] = true
			}
		}
	}
	for _, sm := range m.monitors {
		for _, e := range sm.Spec.Endpoints {
			paths[sm.Name][e.Path] = true
		}
	}
	dir := t.TempDir()
	// The store first, then the allocsvr: an allocsvr whose store never
	// came up stays unready, which would hide why.
	sa := startServing(t, "storesvr", func() []string { return []string{freeAddr(t), freeAddr(t)} },
		func(a []string) []string {
			return []string{"--node-id", "s1", "--bootstrap", "--http-addr", a[0], "--raft-addr", a[1], "--data-dir", filepath.Join(dir, "s1-"+a[1])}
		},
		func(a []string) string { return "http://" + a[0] + "/readyz" })
	aa := startServing(t, "allocsvr", func() []string { return []string{freeAddr(t)} },
		func(a []string) []string {
			return []string{"--node-id", "a1", "--http-addr", a[0], "--store", "http://" + sa[0], "--data-dir", filepath.Join(dir, "a1-"+a[0])}
		},
		func(a []string) string { return "http://" + a[0] + "/readyz" })
	store, alloc := sa[0], aa[0]
	for bin, addr := range map[string]string{"storesvr": store, "allocsvr": alloc} {
		if len(paths[bin]) < 3 {
			t.Errorf("%s: only %v probed or scraped", bin, paths[bin])
		}
		for p := range paths[bin] {
			res, err := http.Get(fmt.Sprintf("http://%s%s", addr, p))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				t.Errorf("%s %s: %s, want 200", bin, p, res.Status)
			}
		}
		// And a path nobody serves is not 200: the probe check can fail.
		res, err := http.Get("http://" + addr + "/readyz-not")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode == http.StatusOK {
			t.Errorf("%s answers 200 to any path", bin)
		}
	}
}
