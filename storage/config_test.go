package storage

import (
	"testing"

	"github.com/seqsvr/seqsvr/internal/spec"
)

func TestParsePeers(t *testing.T) {
	peers, err := ParsePeers(" a=127.0.0.1:7001@127.0.0.1:8001, b=127.0.0.1:7002@127.0.0.1:8002 ")
	if err != nil || len(peers) != 2 || peers[1] != (Peer{ID: "b", RaftAddr: "127.0.0.1:7002", HTTPAddr: "127.0.0.1:8002"}) {
		t.Fatalf("%v %v", peers, err)
	}
	if p, err := ParsePeers(""); p != nil || err != nil {
		t.Fatalf("empty: %v %v", p, err)
	}
	for _, bad := range []string{
		"a", "a=r", "=r@h", "a=@h", "a=r@", "a=r@h,a=r2@h2", "a=r@h,b=r@h2", "a=r@h,b=r2@h", "a=r@h,,b=r2@h2",
	} {
		if _, err := ParsePeers(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestConfigDefaultsAndChecks(t *testing.T) {
	c, err := Config{NodeID: "a", RaftAddr: "r", HTTPAddr: "h"}.withDefaults()
	if err != nil || c.WorkerLeaseTTL != spec.DefaultWorkerLeaseTTL || c.WorkerRetention != spec.DefaultWorkerRetention ||
		c.RequestRecordLimit != DefaultRequestRecordLimit || c.Clock == nil || c.HTTPClient == nil || c.Logger == nil {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for name, bad := range map[string]Config{
		"no id":               {RaftAddr: "r", HTTPAddr: "h"},
		"peers and join":      {NodeID: "a", RaftAddr: "r", HTTPAddr: "h", Join: "x", Peers: []Peer{{"a", "r", "h"}}},
		"bootstrap and peers": {NodeID: "a", RaftAddr: "r", HTTPAddr: "h", Bootstrap: true, Peers: []Peer{{"a", "r", "h"}}},
		"bootstrap and join":  {NodeID: "a", RaftAddr: "r", HTTPAddr: "h", Bootstrap: true, Join: "x"},
	} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// The peers list is checked where it is used: when it is about to
	// become the first configuration.
	for name, bad := range map[string]Config{
		"not in peers":  {NodeID: "a", RaftAddr: "r", HTTPAddr: "h", Peers: []Peer{{"b", "r2", "h2"}}},
		"addr mismatch": {NodeID: "a", RaftAddr: "r", HTTPAddr: "h", Peers: []Peer{{"a", "r9", "h"}}},
	} {
		if err := checkBootstrapPeers(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := checkBootstrapPeers(Config{NodeID: "a", RaftAddr: "r", Peers: []Peer{{"b", "r2", "h2"}, {"a", "r", "h"}}}); err != nil {
		t.Errorf("good peers: %v", err)
	}
}
