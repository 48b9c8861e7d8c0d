//go:build faults

package main

import (
	"bytes"
	"testing"
)

// A faults build takes the pod's name from the environment, so the
// harness can run an ordinal-mode cluster on one machine.
func TestOrdinalHostnameFromEnv(t *testing.T) {
	old := hostname
	t.Cleanup(func() { hostname = old })
	t.Setenv(HostnameEnv, "store-2")
	hostnameFromEnv()
	c, err := parseConfig([]string{"--ordinal-domain", "ordinal.test", "--raft-addr", ":7001", "--http-addr", ":8081", "--data-dir", "d"},
		func(string) string { return "" }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != "store-2" || c.HTTPAddr != "store-2.ordinal.test:8081" {
		t.Fatalf("node %q http %q, want store-2 at store-2.ordinal.test:8081", c.NodeID, c.HTTPAddr)
	}
}
