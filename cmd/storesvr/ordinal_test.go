package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// withHostname makes hostname answer h for the test.
func withHostname(t *testing.T, h string) {
	t.Helper()
	old := hostname
	hostname = func() (string, error) { return h, nil }
	t.Cleanup(func() { hostname = old })
}

func TestOrdinalInitialMembersGetOnePeersList(t *testing.T) {
	const domain = "storesvr.seqsvr.svc.cluster.local"
	want := "storesvr-0=storesvr-0." + domain + ":7001@storesvr-0." + domain + ":8081," +
		"storesvr-1=storesvr-1." + domain + ":7001@storesvr-1." + domain + ":8081," +
		"storesvr-2=storesvr-2." + domain + ":7001@storesvr-2." + domain + ":8081"
	for _, host := range []string{"storesvr-0", "storesvr-1", "storesvr-2." + domain} {
		withHostname(t, host)
		// As the StatefulSet passes them: the environment, ports only.
		env := map[string]string{"SEQSVR_ORDINAL_DOMAIN": domain, "SEQSVR_RAFT_ADDR": ":7001", "SEQSVR_HTTP_ADDR": "0.0.0.0:8081", "SEQSVR_DATA_DIR": "/var/lib/seqsvr"}
		c, err := parseConfig(nil, func(k string) string { return env[k] }, &bytes.Buffer{})
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		id, _, _ := strings.Cut(host, ".")
		if c.NodeID != id || c.RaftAddr != id+"."+domain+":7001" || c.HTTPAddr != id+"."+domain+":8081" {
			t.Errorf("%s: node %q raft %q http %q", host, c.NodeID, c.RaftAddr, c.HTTPAddr)
		}
		if c.Peers != want || c.Join != "" {
			t.Errorf("%s: peers %q join %q, want peers %q", host, c.Peers, c.Join, want)
		}
	}
}

func TestOrdinalScaleUpJoinsThroughOrdinalZero(t *testing.T) {
	withHostname(t, "db-store-5")
	c, err := parseConfig([]string{"--ordinal-domain", "st.ns.svc.cluster.local.", "--ordinal-initial", "5",
		"--raft-addr", "127.0.0.1:7101", "--http-addr", ":8181", "--data-dir", "d"}, func(string) string { return "" }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != "db-store-5" || c.Join != "db-store-0.st.ns.svc.cluster.local:8181" || c.Peers != "" ||
		c.RaftAddr != "db-store-5.st.ns.svc.cluster.local:7101" {
		t.Fatalf("config %+v", c)
	}
	withHostname(t, "db-store-4")
	if c, err = parseConfig([]string{"--ordinal-domain", "st", "--ordinal-initial", "5", "--data-dir", "d"}, func(string) string { return "" }, &bytes.Buffer{}); err != nil ||
		c.Join != "" || strings.Count(c.Peers, "@") != 5 {
		t.Fatalf("ordinal 4 of 5 initial: %+v %v", c, err)
	}
}

func TestOrdinalRefusals(t *testing.T) {
	none := func(string) string { return "" }
	for _, tc := range []struct {
		host string
		args []string
		want string
	}{
		{"storesvr", nil, "NAME-ORDINAL"},
		{"storesvr-", nil, "NAME-ORDINAL"},
		{"storesvr-01", nil, "NAME-ORDINAL"},
		{"storesvr-+1", nil, "NAME-ORDINAL"},
		{"-1", nil, "NAME-ORDINAL"},
		{"storesvr-1", []string{"--node-id", "s1"}, "--node-id must not be set"},
		{"storesvr-1", []string{"--peers", "a=b@c"}, "--peers must not be set"},
		{"storesvr-1", []string{"--join", "h:1"}, "--join must not be set"},
		{"storesvr-1", []string{"--bootstrap"}, "--bootstrap must not be set"},
		{"storesvr-1", []string{"--ordinal-initial", "0"}, "at least 1"},
		{"storesvr-1", []string{"--raft-addr", "host"}, "port of --raft-addr"},
		{"storesvr-1", []string{"--http-addr", "host:"}, "port of --http-addr"},
	} {
		withHostname(t, tc.host)
		args := append([]string{"--ordinal-domain", "st.ns.svc", "--data-dir", "d"}, tc.args...)
		_, err := parseConfig(args, none, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("host %q %v: err %v, want it to name %q", tc.host, tc.args, err, tc.want)
		}
	}
	hostname = func() (string, error) { return "", errors.New("no uts") }
	if _, err := parseConfig([]string{"--ordinal-domain", "x", "--data-dir", "d"}, none, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "no uts") {
		t.Errorf("hostname failure: %v", err)
	}
	// Without --ordinal-domain the hostname plays no part.
	if c, err := parseConfig([]string{"--node-id", "s1", "--data-dir", "d", "--peers", "s1=127.0.0.1:7001@127.0.0.1:8081"}, none, &bytes.Buffer{}); err != nil || c.NodeID != "s1" {
		t.Fatalf("plain flags: %+v %v", c, err)
	}
}
