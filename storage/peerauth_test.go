package storage

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

// TestRaftPeerNames: who may speak Raft is the configuration's members
// (one that never started included: "listed") with their Raft hosts, and
// a member being added until that ends.
func TestRaftPeerNames(t *testing.T) {
	// A listed member that never starts Raft: it answers MemberProbe as
	// a member still waiting, so the others bootstrap with it listed.
	w := &waitingService{id: "listed", why: func() string { return "never starts" }}
	mux := http.NewServeMux()
	for _, svc := range w.routes().Services() {
		mux.Handle(svc.Path, svc.Handler)
	}
	listed := httptest.NewUnstartedServer(mux)
	listed.Config.Protocols = new(http.Protocols)
	listed.Config.Protocols.SetUnencryptedHTTP2(true) // members call each other over h2c
	listed.Start()
	t.Cleanup(listed.Close)
	c := newTestCluster(t, 3, func(cfg *Config) {
		cfg.Peers = append(cfg.Peers, Peer{ID: "listed", RaftAddr: "10.0.0.8:7000", HTTPAddr: listed.Listener.Addr().String()})
	})
	leader := c.waitForLeader()
	names := leader.store.RaftPeerNames()
	for _, want := range []string{"n1", "n2", "n3", "listed", "10.0.0.8"} {
		if !slices.Contains(names, want) {
			t.Errorf("RaftPeerNames %v lacks %s", names, want)
		}
	}
	if slices.Contains(names, "n9") {
		t.Fatalf("RaftPeerNames %v holds n9 before it is being added", names)
	}
	leader.store.addPendingPeer("n9", "10.0.0.9:7000")
	names = leader.store.RaftPeerNames()
	if !slices.Contains(names, "n9") || !slices.Contains(names, "10.0.0.9") {
		t.Fatalf("RaftPeerNames %v lacks the member being added", names)
	}
	leader.store.removePendingPeer("n9", "10.0.0.9:7000")
	if names = leader.store.RaftPeerNames(); slices.Contains(names, "n9") || slices.Contains(names, "10.0.0.9") {
		t.Fatalf("RaftPeerNames %v still holds n9 after its add ended", names)
	}
}
