package deploy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// dnsnamePackage is the Debian package of the CNI dnsname plugin: podman
// 4's CNI networks have container DNS only with it, and it is a
// Recommends of podman, left out by --no-install-recommends.
const dnsnamePackage = "golang-github-containernetworking-plugin-dnsname"

// cniPluginDirs is where podman looks for CNI plugins when
// containers.conf names no cni_plugin_dirs.
var cniPluginDirs = []string{"/usr/local/libexec/cni", "/usr/libexec/cni", "/usr/local/lib/cni", "/usr/lib/cni", "/opt/cni/bin"}

// networkDNSProblem reads `podman network inspect` of one network and
// says why its containers cannot resolve each other's names, nil when
// they can. Without DNS the compose services and the StatefulSet's pods
// never find their peers, and the cluster times out with "no raft
// leader" instead of naming the cause.
func networkDNSProblem(inspect []byte, pluginDirs []string) error {
	var nets []struct {
		Name       string `json:"name"`
		DNSEnabled bool   `json:"dns_enabled"`
	}
	if err := json.Unmarshal(inspect, &nets); err != nil || len(nets) != 1 {
		return fmt.Errorf("podman network inspect: %d networks, %v: %s", len(nets), err, inspect)
	}
	if nets[0].DNSEnabled {
		return nil
	}
	for _, d := range pluginDirs {
		if fi, err := os.Stat(filepath.Join(d, "dnsname")); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return fmt.Errorf("podman network %s has no container DNS (dns_enabled: false) although the dnsname plugin is at %s: check podman's network backend and containers.conf", nets[0].Name, d)
		}
	}
	return fmt.Errorf("podman network %s has no container DNS (dns_enabled: false): the CNI dnsname plugin is in none of %s; apt-get install %s (make test-packages installs it)",
		nets[0].Name, strings.Join(pluginDirs, " "), dnsnamePackage)
}

// createNetwork creates a podman network for one cluster and fails the
// test at once when its containers would have no DNS.
func createNetwork(t *testing.T, e *engine, name string) {
	t.Helper()
	e.must(time.Minute, "network", "create", name)
	t.Cleanup(func() { e.cmd(time.Minute, "network", "rm", "-f", name) })
	if err := networkDNSProblem(e.must(time.Minute, "network", "inspect", name), cniPluginDirs); err != nil {
		t.Fatal(err)
	}
}

func TestNetworkDNSProblem(t *testing.T) {
	const off = `[{"name":"n1","dns_enabled":false}]`
	empty := t.TempDir()
	withPlugin := t.TempDir()
	if err := os.WriteFile(filepath.Join(withPlugin, "dnsname"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := networkDNSProblem([]byte(`[{"name":"n1","dns_enabled":true}]`), []string{empty}); err != nil {
		t.Errorf("DNS enabled: %v", err)
	}
	err := networkDNSProblem([]byte(off), []string{empty})
	if err == nil || !strings.Contains(err.Error(), dnsnamePackage) || !strings.Contains(err.Error(), empty) {
		t.Errorf("no plugin: %v, want the package %s and the dirs searched", err, dnsnamePackage)
	}
	err = networkDNSProblem([]byte(off), []string{empty, withPlugin})
	if err == nil || strings.Contains(err.Error(), dnsnamePackage) || !strings.Contains(err.Error(), withPlugin) {
		t.Errorf("plugin present, DNS off: %v, want the plugin's dir and not the package", err)
	}
	if err := networkDNSProblem([]byte(`[]`), nil); err == nil {
		t.Error("no network in the inspect output: no error")
	}
}
