// Package storage is the Raft-replicated store behind storesvr: the Raft
// member (Open, bootstrap, join, the checks of existing state), the Connect
// handler (seqsvr.v1.StoreService) with leader forwarding, and the
// HTTP/1.1 front's ReserveSegment route. What a command does to the state
// (tags, reservations, workers, spaces, snapshots) and the checks of each
// request are package storage/fsm's.
//
// API used by cmd/storesvr:
//
//	peers, err := storage.ParsePeers("a=127.0.0.1:7001@127.0.0.1:8001,...")
//	st, err := storage.Open(storage.Config{NodeID, RaftAddr, HTTPAddr, DataDir, Peers or Join, Logger})
//	st.Routes()     // StoreService: connect-go handlers, ReserveSegment on the HTTP/1.1 front
//	st.Ready(ctx)   // for /readyz
//	st.Raft()       // metrics, admin
//	st.Close()      // clean raft shutdown
//
// Errors: every business error wraps an internal/errs kind (the sentinels
// in errors.go and fsm's are of a kind too); anything else is an internal
// failure. The handlers answer errs.Connect(err), so the Connect codes are
// package errs' and the leader's answer to a forwarded call passes through.
//
// Guarantees (the state machine's own are in package fsm):
//
//   - Every write is one seqsvr.v1.Command proposed on the leader, stamped
//     with the leader's clock (Config.Clock) and the leader's
//     configuration (lease TTLs, retention, idempotency bound), and
//     answered only after it is committed and applied. Raft's
//     ErrLeadershipLost means the write may have committed: it answers
//     unavailable, and the retry with the same request_id is safe.
//   - GetTag and ListTags are linearizable: served by the leader after a
//     barrier in its term and a VerifyLeader round. The exception is
//     GetTag with local=true: this member's own applied state, never
//     forwarded, not linearizable (for diagnostics and the fault harness).
//     GetSpace, ListSpaces and GetRouting are linearizable like GetTag.
//   - A call that reaches a follower is forwarded once to the leader (HTTP
//     address from the FSM's member list, recorded by each new leader from
//     its bootstrap list and by AddMember), marked with ForwardedHeader so it
//     is never forwarded twice; the leader's answer and Connect code pass
//     through. No leader: unavailable.
//   - A member never guesses its cluster: without state it needs Peers,
//     Join or Bootstrap (else ErrNoCluster), and a data dir owned by another
//     node ID is refused (ErrStateConflict).
//
// Planted bugs (internal/faults, only in -tags faults builds):
// reserve-before-commit, stale-reads, local-reads, blind-bootstrap.
package storage
