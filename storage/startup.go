package storage

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// Startup errors. A member never guesses which cluster it belongs to: a
// silent one-member bootstrap on a host where --peers was forgotten would
// start a second cluster that hands out IDs from 1 again.
var (
	// ErrNoCluster: no Raft state, and neither Peers, Join nor Bootstrap
	// says how to get some.
	ErrNoCluster = errs.New(errs.FailedPrecondition, "no cluster to start or join")
	// ErrStateConflict: the data dir holds the state of a cluster this
	// member's ID is not part of.
	ErrStateConflict = errs.New(errs.FailedPrecondition, "data dir holds another member's state")
)

// nodeIDKey is where the stable store records which member owns the data
// dir: Raft's configuration alone cannot tell a removed member's own
// directory from another member's.
var nodeIDKey = []byte("seqsvr_node_id")

// dataDirOwner is the node ID recorded as the owner of the stable store
// ("" if none yet), and refuses a start with another node ID: that
// directory is some other member's state.
func dataDirOwner(stable raft.StableStore, cfg Config) (string, error) {
	owner, err := stable.Get(nodeIDKey)
	// Both raft stores answer a missing key with an error reading "not
	// found" (raft itself tests it the same way).
	if err != nil && err.Error() != "not found" {
		return "", fmt.Errorf("storage: read the data dir's owner: %w", err)
	}
	if len(owner) != 0 && string(owner) != cfg.NodeID {
		return "", fmt.Errorf("%w: %s belongs to member %q, and --node-id is %q: start with the node ID this directory belongs to, or with an empty data dir",
			ErrStateConflict, cfg.DataDir, owner, cfg.NodeID)
	}
	return string(owner), nil
}

// claimDataDir records cfg.NodeID as the owner of the stable store. It is
// called once the start is accepted, so a refused start never claims a
// directory that held state before owners were recorded.
func claimDataDir(stable raft.StableStore, cfg Config) error {
	if err := stable.Set(nodeIDKey, []byte(cfg.NodeID)); err != nil {
		return fmt.Errorf("storage: record the data dir's owner: %w", err)
	}
	return nil
}

// checkBootstrapPeers checks a Peers list about to be written as the
// first configuration: this member must be in it at its own Raft address.
func checkBootstrapPeers(c Config) error {
	for _, p := range c.Peers {
		if p.ID != c.NodeID {
			continue
		}
		if p.RaftAddr != c.RaftAddr {
			return fmt.Errorf("storage: peers list %s at Raft address %s, but this member's Raft address is %s", p.ID, p.RaftAddr, c.RaftAddr)
		}
		return nil
	}
	return fmt.Errorf("storage: this member's ID %q is not in the peers list", c.NodeID)
}

// checkStoredConfiguration compares the configuration in existing state
// with what this start was told. The stored state wins: a member missing
// from it was removed (and may be re-added), a warning; a different Raft
// address or peers list is a warning naming each difference, since the
// cluster keeps dialling the stored addresses. (Another member's directory
// is refused earlier, by dataDirOwner.) A directory with no recorded owner
// (written before owners were recorded) cannot tell a removed member from
// another member: there a member missing from the configuration is an
// error, as it always was.
func (s *Store) checkStoredConfiguration(unclaimed bool) error {
	f := s.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("storage: read the stored configuration: %w", err)
	}
	servers := f.Configuration().Servers
	if len(servers) == 0 {
		// A member whose join never completed: it waits to be added.
		s.log.Warn("existing raft state holds no cluster configuration yet; waiting to be added by the leader", "data_dir", s.cfg.DataDir)
		return nil
	}
	stored := map[string]string{}
	for _, srv := range servers {
		stored[string(srv.ID)] = string(srv.Address)
	}
	self, ok := stored[s.cfg.NodeID]
	if !ok && unclaimed {
		return fmt.Errorf("%w: %s holds the state of a cluster with members %s, and --node-id %q is not one of them: start with the node ID this directory belongs to, or with an empty data dir",
			ErrStateConflict, s.cfg.DataDir, formatMembers(stored), s.cfg.NodeID)
	}
	if !ok {
		// This directory is this member's (dataDirOwner checked), so it
		// was removed from the cluster, and may be about to be added
		// again: the leader's AddMember brings it back and it catches up.
		s.log.Warn("this member is not in its stored cluster configuration (it was removed); it serves nothing until the leader adds it again",
			"node_id", s.cfg.NodeID, "stored", formatMembers(stored))
		return nil
	}
	if self != s.cfg.RaftAddr {
		s.log.Warn("--raft-addr differs from the stored configuration; the stored one is used: other members keep dialling it (move the member with RemoveMember and AddMember)",
			"flag_raft_addr", s.cfg.RaftAddr, "stored_raft_addr", self)
	}
	if len(s.cfg.Peers) > 0 {
		if diff := peersDiff(s.cfg.Peers, stored); len(diff) > 0 {
			s.log.Warn("--peers differs from the stored configuration; --peers is ignored and the stored configuration is used",
				"differences", strings.Join(diff, "; "), "stored", formatMembers(stored))
		}
	}
	if s.cfg.Join != "" {
		s.log.Info("restarting from existing raft state; --join ignored", "join", s.cfg.Join)
	}
	return nil
}

// peersDiff lists how peers differs from the stored members (ID -> Raft
// address), one entry per member, in ID order.
func peersDiff(peers []Peer, stored map[string]string) []string {
	flag := map[string]string{}
	for _, p := range peers {
		flag[p.ID] = p.RaftAddr
	}
	var ids []string
	for id := range flag {
		ids = append(ids, id)
	}
	for id := range stored {
		if _, ok := flag[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var out []string
	for _, id := range ids {
		f, inFlag := flag[id]
		st, inStored := stored[id]
		switch {
		case !inStored:
			out = append(out, fmt.Sprintf("%s=%s is in --peers but not a member", id, f))
		case !inFlag:
			out = append(out, fmt.Sprintf("%s=%s is a member but not in --peers", id, st))
		case f != st:
			out = append(out, fmt.Sprintf("%s has Raft address %s in --peers but %s stored", id, f, st))
		}
	}
	return out
}

// formatMembers renders ID -> Raft address as "a=addr,b=addr" in ID order.
func formatMembers(m map[string]string) string {
	ids := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = id + "=" + m[id]
	}
	return strings.Join(parts, ",")
}

// raftServers is the Peers list as a raft configuration.
func raftServers(peers []Peer) raft.Configuration {
	var conf raft.Configuration
	for _, p := range peers {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
	}
	return conf
}
