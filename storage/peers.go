package storage

import (
	"fmt"
	"strings"
)

// Peer is one initial cluster member: its Raft server ID, Raft transport
// address and HTTP (Connect) address.
type Peer struct{ ID, RaftAddr, HTTPAddr string }

// ParsePeers parses "ID=RAFTADDR@HTTPADDR,..." (the --peers flag). Empty
// input gives no peers. Duplicated IDs or addresses are errors.
func ParsePeers(s string) ([]Peer, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var peers []Peer
	ids, raftAddrs, httpAddrs := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for i, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		id, addrs, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("peer %d %q: want ID=RAFTADDR@HTTPADDR (missing '=')", i+1, item)
		}
		raftAddr, httpAddr, ok := strings.Cut(addrs, "@")
		if !ok {
			return nil, fmt.Errorf("peer %d %q: want ID=RAFTADDR@HTTPADDR (missing '@')", i+1, item)
		}
		p := Peer{ID: strings.TrimSpace(id), RaftAddr: strings.TrimSpace(raftAddr), HTTPAddr: strings.TrimSpace(httpAddr)}
		switch {
		case p.ID == "":
			return nil, fmt.Errorf("peer %d %q: empty ID", i+1, item)
		case p.RaftAddr == "":
			return nil, fmt.Errorf("peer %d %q: empty Raft address", i+1, item)
		case p.HTTPAddr == "":
			return nil, fmt.Errorf("peer %d %q: empty HTTP address", i+1, item)
		case ids[p.ID]:
			return nil, fmt.Errorf("peer %d: ID %q listed twice", i+1, p.ID)
		case raftAddrs[p.RaftAddr]:
			return nil, fmt.Errorf("peer %d: Raft address %q listed twice", i+1, p.RaftAddr)
		case httpAddrs[p.HTTPAddr]:
			return nil, fmt.Errorf("peer %d: HTTP address %q listed twice", i+1, p.HTTPAddr)
		}
		ids[p.ID], raftAddrs[p.RaftAddr], httpAddrs[p.HTTPAddr] = true, true, true
		peers = append(peers, p)
	}
	return peers, nil
}
