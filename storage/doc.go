// Package storage is the Raft-replicated store behind storesvr (tags,
// snowflake workers, per-key sequence spaces): the FSM, the Raft member
// around it and the Connect handler (seqsvr.v1.StoreService) with leader
// forwarding.
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
// in errors.go are of a kind too); anything else is an internal failure.
// The handlers answer errs.Connect(err), so the Connect codes are package
// errs' and the leader's answer to a forwarded call passes through.
//
// Guarantees:
//
//   - The Raft log holds seqsvr.v1.Command entries. Apply is deterministic:
//     time comes only from Command.now_ms (the proposing leader's clock) and
//     configuration (lease TTL, retention, idempotency bound) only from the
//     command. An undecodable entry or unknown command panics rather than
//     fork the replicas. Business errors are results, not panics.
//   - ReserveSegment does max_id += size inside Apply and answers only after
//     the entry is committed and applied, so reserved ranges never overlap
//     and max_id covers every acknowledged segment. An int64 overflow is
//     invalid_argument and changes nothing. A request_id is remembered in a
//     bounded FIFO record (part of snapshots): a retry returns the same
//     segment; the same request_id for another tag is invalid_argument.
//     Raft's ErrLeadershipLost means the write may have committed: it answers
//     unavailable, and the retry with the same request_id is safe.
//   - GetTag and ListTags are linearizable: served by the leader after a
//     barrier in its term and a VerifyLeader round. The exception is
//     GetTag with local=true: this member's own applied state, never
//     forwarded, not linearizable (for diagnostics and the fault harness).
//   - A call that reaches a follower is forwarded once to the leader (HTTP
//     address from the FSM's member list, recorded by each new leader from
//     its bootstrap list and by AddMember), marked with ForwardedHeader so it
//     is never forwarded twice; the leader's answer and Connect code pass
//     through. No leader: unavailable.
//   - Snowflake workers: a node_id keeps its worker ID; a live lease held by
//     another instance is failed_precondition; a caller clock behind the
//     worker's recorded last timestamp is unavailable; a worker ID taken
//     over by a new instance starts above the old holder's last timestamp
//     plus one lease TTL; expired IDs are reclaimed only after the retention
//     period, otherwise resource_exhausted.
//   - Per-key sequences (spaces): a space's sections each have one durable
//     max_seq and at most one owner among the allocsvrs, recorded in the
//     space's routing table (compact runs of sections). An allocsvr holds a
//     lease by SeqHeartbeat (Config.SeqLeaseTTL on the leader's clock,
//     carried in the command); another instance of its node_id is refused
//     (failed_precondition) while the lease is live. Every heartbeat and
//     CreateSpace rebalances the sections evenly over the live allocsvrs,
//     but a section moves away from a live owner only after that owner
//     released it (or left, or its lease expired): until then the target is
//     only next_owner. routing_version grows on every change of a table and
//     only then. RaiseSections is accepted only from the live instance that
//     owns every listed section, never lowers a max_seq, answers a first
//     load (known_max -1) with the previous max_seq, is idempotent for a
//     retried known_max, refuses an int64 overflow (resource_exhausted) and
//     is all-or-nothing. So a new owner's first load answers at least
//     everything a previous owner could hand out, and a stale owner cannot
//     commit a limit after losing its section. GetSpace, ListSpaces and
//     GetRouting are linearizable like GetTag.
//
// Planted bugs (internal/faults, only in -tags faults builds):
// reserve-before-commit, stale-reads, snapshot-drops-maxid,
// seq-no-handover-wait.
package storage
