package storage

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// peerAuth is what RaftPeerNames reads beyond the Raft configuration.
type peerAuth struct {
	// pendingPeers holds the names (node ID, Raft host) of members being
	// added that are not in the configuration yet, as keys (values
	// unused): a member must accept their connections before the change
	// that adds them is appended.
	pendingPeers sync.Map
	// joinPeers is the cluster's members as the join target listed them,
	// for a member that joins and has no configuration yet: the leader
	// that adds it may be any of them.
	joinPeers atomic.Pointer[[]string]
	joinAsked atomic.Int64 // unix nanoseconds of the last ask
}

// joinAskEvery bounds how often a joining member asks its join target for
// the members: once per refused handshake would be one call per retry of
// the leader.
const joinAskEvery = time.Second

// RaftPeerNames is who may speak Raft with this member now: the node IDs
// and Raft hosts of the latest Raft configuration (a change appended but
// not committed included), of the Peers list, of members being added
// (pendingPeers) and, while this member has no configuration and joins,
// of the members its join target lists and the target's own host. Raft's
// TLS transport lets a connection in only if its certificate names one of
// them (tlsconf.Peers): a certificate of the CA alone could claim to be
// the leader.
func (s *Store) RaftPeerNames() []string {
	var names []string
	add := func(id, raftAddr string) {
		if id != "" {
			names = append(names, id)
		}
		if host, _, err := net.SplitHostPort(raftAddr); err == nil && host != "" {
			names = append(names, host)
		}
	}
	servers := s.raft.GetConfiguration().Configuration().Servers
	for _, srv := range servers {
		add(string(srv.ID), string(srv.Address))
	}
	for _, p := range s.cfg.Peers {
		add(p.ID, p.RaftAddr)
	}
	s.pendingPeers.Range(func(k, _ any) bool {
		if n, ok := k.(string); ok {
			names = append(names, n)
		}
		return true
	})
	if len(servers) == 0 && s.cfg.Join != "" {
		add("", s.cfg.Join)
		if p := s.joinPeers.Load(); p != nil {
			names = append(names, *p...)
		}
		s.askJoinPeers()
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// addPendingPeer lets a member being added (its ID and Raft address)
// connect before the configuration holds it; removePendingPeer ends that.
func (s *Store) addPendingPeer(id, raftAddr string) {
	for _, n := range peerNames(id, raftAddr) {
		s.pendingPeers.Store(n, struct{}{})
	}
}

// removePendingPeer undoes addPendingPeer.
func (s *Store) removePendingPeer(id, raftAddr string) {
	for _, n := range peerNames(id, raftAddr) {
		s.pendingPeers.Delete(n)
	}
}

func peerNames(id, raftAddr string) []string {
	out := []string{id}
	if host, _, err := net.SplitHostPort(raftAddr); err == nil && host != "" {
		out = append(out, host)
	}
	return out
}

// askJoinPeers asks the join target for the members, in the background
// (it runs from a TLS handshake), at most once per joinAskEvery.
func (s *Store) askJoinPeers() {
	now := time.Now().UnixNano()
	last := s.joinAsked.Load()
	if now-last < int64(joinAskEvery) || !s.joinAsked.CompareAndSwap(last, now) {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(s.stopCtx, 3*time.Second)
		defer cancel()
		res, err := s.client(s.cfg.Join).ClusterStatus(ctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
		if err != nil {
			s.log.Warn("cannot list the members through the join target; a Raft connection from them is refused until it answers", "join", s.cfg.Join, "err", err)
			return
		}
		var names []string
		for _, m := range res.Msg.GetMembers() {
			names = append(names, peerNames(m.GetId(), m.GetRaftAddr())...)
		}
		s.joinPeers.Store(&names)
	}()
}
