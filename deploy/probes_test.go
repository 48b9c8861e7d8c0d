package deploy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func startBin(t *testing.T, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(binDir, bin), args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
}

// waitStatus polls url until it answers want, failing after a minute.
func waitStatus(t *testing.T, url string, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	last := "no answer"
	for {
		res, err := http.Get(url)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == want {
				return
			}
			last = res.Status
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("GET %s: %s, want %d", url, last, want)
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
	store, raft, alloc := freeAddr(t), freeAddr(t), freeAddr(t)
	dir := t.TempDir()
	startBin(t, "storesvr", "--node-id", "s1", "--bootstrap", "--http-addr", store, "--raft-addr", raft, "--data-dir", filepath.Join(dir, "s1"))
	startBin(t, "allocsvr", "--node-id", "a1", "--http-addr", alloc, "--store", "http://"+store, "--data-dir", filepath.Join(dir, "a1"))
	for bin, addr := range map[string]string{"storesvr": store, "allocsvr": alloc} {
		if len(paths[bin]) < 3 {
			t.Errorf("%s: only %v probed or scraped", bin, paths[bin])
		}
		for p := range paths[bin] {
			waitStatus(t, fmt.Sprintf("http://%s%s", addr, p), http.StatusOK)
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
