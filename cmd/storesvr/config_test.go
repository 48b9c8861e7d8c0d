package main

import (
	"bytes"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/serve"
	"github.com/seqsvr/seqsvr/storage"
)

func TestConfigRequiredAndEnv(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseConfig(nil, func(string) string { return "" }, &out); err == nil ||
		!strings.Contains(err.Error(), "--node-id") || !strings.Contains(err.Error(), "--data-dir") {
		t.Fatalf("missing required flags: err %v", err)
	}
	env := map[string]string{"SEQSVR_NODE_ID": "s9", "SEQSVR_DATA_DIR": "/d", "SEQSVR_PEERS": "x", "SEQSVR_ELECTION_TIMEOUT": "1s", "SEQSVR_SEQ_LEASE_TTL": "3s"}
	c, err := parseConfig([]string{"--node-id", "s1", "--peers", ""}, func(k string) string { return env[k] }, &out)
	if err != nil {
		t.Fatal(err)
	}
	if c.NodeID != "s1" || c.DataDir != "/d" || c.ElectionTimeout.String() != "1s" || c.SeqLeaseTTL.String() != "3s" {
		t.Fatalf("config %+v", c)
	}
	// An explicitly empty flag still wins over the environment.
	if c.Peers != "" {
		t.Fatalf("--peers '' lost to SEQSVR_PEERS: %q", c.Peers)
	}
	if _, err := parseConfig([]string{"--node-id", "a", "--data-dir", "d", "--peers", "a=x@y", "--join", "h:1"}, func(string) string { return "" }, &out); err == nil {
		t.Fatal("--peers with --join accepted")
	}
	if code := serve.Main("storesvr", []string{"--help"}, func(string) string { return "" }, &out, parseConfig); code != 0 || !strings.Contains(out.String(), "SEQSVR_RAFT_ADDR") ||
		!strings.Contains(out.String(), "--seq-lease-ttl") {
		t.Fatalf("--help: code %d", code)
	}
	if code := serve.Main("storesvr", []string{"--bogus"}, func(string) string { return "" }, &out, parseConfig); code != 2 {
		t.Fatalf("bad flag: code %d, want 2", code)
	}
}

func TestConfigBootstrapAndMaxSegmentSize(t *testing.T) {
	var out bytes.Buffer
	none := func(string) string { return "" }
	base := []string{"--node-id", "a", "--data-dir", "d"}
	c, err := parseConfig(base, none, &out)
	if err != nil || c.Bootstrap || c.MaxSegmentSize != storage.DefaultMaxSegmentSize {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	c, err = parseConfig(append(base, "--bootstrap", "--max-segment-size", "500"), none, &out)
	if err != nil || !c.Bootstrap || c.MaxSegmentSize != 500 {
		t.Fatalf("--bootstrap --max-segment-size 500: %+v %v", c, err)
	}
	if c, err = parseConfig(base, func(k string) string { return map[string]string{"SEQSVR_BOOTSTRAP": "true"}[k] }, &out); err != nil || !c.Bootstrap {
		t.Fatalf("SEQSVR_BOOTSTRAP: %+v %v", c, err)
	}
	for _, bad := range [][]string{
		{"--bootstrap", "--peers", "a=x@y"},
		{"--bootstrap", "--join", "h:1"},
		{"--max-segment-size", "0"},
		{"--max-segment-size", "-3"},
		{"--max-segment-size", "1099511627777"},
		{"--worker-lease-ttl", "61m"},
		{"--seq-lease-ttl", "87600h"},
	} {
		if _, err := parseConfig(append(append([]string{}, base...), bad...), none, &out); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}

// --restore and --recover start a member alone: they refuse --peers,
// --join, --bootstrap and each other, and drop the --peers or --join an
// ordinal hostname derives (the identity stays).
func TestConfigRestoreAndRecover(t *testing.T) {
	var out bytes.Buffer
	none := func(string) string { return "" }
	base := []string{"--node-id", "a", "--data-dir", "d"}
	c, err := parseConfig(append(base, "--restore", "f.bak", "--restore-jump", "3h", "--restore-min-jump", "1000"), none, &out)
	if err != nil || c.Restore != "f.bak" || c.RestoreJump != 3*time.Hour || c.MinJump != 1000 {
		t.Fatalf("--restore: %+v %v", c, err)
	}
	if c, err = parseConfig(append(base, "--recover"), none, &out); err != nil || !c.Recover {
		t.Fatalf("--recover: %+v %v", c, err)
	}
	for _, bad := range [][]string{
		{"--restore", "f", "--peers", "a=x@y"},
		{"--restore", "f", "--join", "h:1"},
		{"--restore", "f", "--bootstrap"},
		{"--restore", "f", "--recover"},
		{"--recover", "--peers", "a=x@y"},
		{"--recover", "--join", "h:1"},
		{"--restore", "f", "--restore-jump", "-1s"},
		{"--recover", "--restore-min-jump", "-1"},
	} {
		if _, err := parseConfig(append(append([]string{}, base...), bad...), none, &out); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
	withHostname(t, "storesvr-1")
	for _, flag := range [][]string{{"--restore", "f"}, {"--recover"}} {
		c, err := parseConfig(append([]string{"--ordinal-domain", "st", "--data-dir", "d"}, flag...), none, &out)
		if err != nil || c.NodeID != "storesvr-1" || c.Peers != "" || c.Join != "" {
			t.Errorf("%v with --ordinal-domain: %+v %v", flag, c, err)
		}
	}
}

// The tuning flags default to storage.DefaultConfig's values, and no help
// text repeats a default as a number of its own.
func TestConfigDefaultsFromStorage(t *testing.T) {
	var out bytes.Buffer
	none := func(string) string { return "" }
	c, err := parseConfig([]string{"--node-id", "a", "--data-dir", "d"}, none, &out)
	if err != nil {
		t.Fatal(err)
	}
	d := storage.DefaultConfig()
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"max-segment-size", c.MaxSegmentSize, d.MaxSegmentSize},
		{"heartbeat-timeout", c.HeartbeatTimeout, d.HeartbeatTimeout},
		{"election-timeout", c.ElectionTimeout, d.ElectionTimeout},
		{"commit-timeout", c.CommitTimeout, d.CommitTimeout},
		{"snapshot-threshold", c.SnapshotThreshold, d.SnapshotThreshold},
		{"snapshot-interval", c.SnapshotInterval, d.SnapshotInterval},
		{"request-record-limit", c.RequestRecordLimit, d.RequestRecordLimit},
		{"worker-lease-ttl", c.WorkerLeaseTTL, d.WorkerLeaseTTL},
		{"worker-retention", c.WorkerRetention, d.WorkerRetention},
		{"seq-lease-ttl", c.SeqLeaseTTL, d.SeqLeaseTTL},
	} {
		if f.got != f.want || reflect.ValueOf(f.got).IsZero() {
			t.Errorf("--%s defaults to %v, want storage's %v", f.name, f.got, f.want)
		}
	}
	out.Reset()
	serve.Main("storesvr", []string{"--help"}, none, &out, parseConfig)
	if m := regexp.MustCompile(`\((0: )?storage default`).FindString(out.String()); m != "" {
		t.Errorf("--help names a default without its value: %q", m)
	}
}
