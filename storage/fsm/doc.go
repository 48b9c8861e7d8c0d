// Package fsm is the store's replicated state machine: the Raft log's
// seqsvr.v1.Command entries applied to tags, the request_id record,
// tombstones, snowflake workers, per-key sequence spaces (sections,
// routing, used-sets), allocsvr leases and the members' addresses; its
// snapshots; and the checks of the requests that become commands. It knows
// nothing of Raft membership, RPCs or forwarding (package storage, the
// server around it).
//
// API used by package storage:
//
//	m := fsm.New(nil, fsm.OnFatal(stop))  // the raft.FSM: Apply, Snapshot, Restore
//	res := future.Response().(fsm.Result) // after raft.Apply; res.Err: the business error
//	m.Tag(name), m.ListTags(size, after)  // reads, made linearizable by the caller
//	fsm.CheckCommand(cmd, limits)         // refuse a command before proposing it
//	fsm.CommandLevel(cmd)                 // the cluster version it needs
//
// Every command is registered once (commands.go) with its check, its
// level and how it is applied; Apply, CheckCommand and CommandLevel read
// that one table.
//
// Errors: every business error wraps an internal/errs kind (the sentinels
// in errors.go are of a kind too).
//
// Guarantees:
//
//   - Apply is deterministic: time comes only from Command.now_ms (the
//     proposing leader's clock) and configuration (lease TTL, retention,
//     idempotency bound) only from the command. An undecodable entry or
//     unknown command (a newer release's) is never skipped, which would
//     fork the replicas: the machine stops on it, changing nothing, and
//     tells OnFatal (the store logs it and exits non-zero); an unknown
//     command is never proposed (ErrUnknownCommand). Business errors are
//     results (Result.Err), not panics, and change nothing.
//   - ReserveSegment does max_id += size inside Apply, so ranges reserved
//     in log order never overlap and max_id covers every one of them. An
//     int64 overflow changes nothing. A request_id is remembered in a
//     bounded FIFO record (part of snapshots): a retry returns the same
//     segment; the same request_id for another tag is invalid_argument.
//   - A deleted tag leaves a tombstone with its max_id; a tag created again
//     under that name starts above it.
//   - Snapshots hold the whole state; equal states give equal bytes.
//     Restore replaces everything held before.
//   - Snowflake workers: a node_id keeps its worker ID; a live lease held by
//     another instance is failed_precondition; a caller clock behind the
//     worker's recorded last timestamp is unavailable; a worker ID taken
//     over by a new instance starts above the old holder's last timestamp
//     plus one lease TTL; expired IDs are reclaimed only after the retention
//     period, otherwise resource_exhausted.
//   - Per-key sequences (spaces): a space's sections each have one durable
//     max_seq and at most one owner among the allocsvrs, recorded in the
//     space's routing table (compact runs of sections). An allocsvr holds a
//     lease by SeqHeartbeat (the TTL carried in the command, on the leader's
//     clock); another instance of its node_id is refused
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
//     commit a limit after losing its section.
//   - The cluster ID is the first one applied (NoopCommand.cluster_id,
//     proposed by each new leader; a restore writes it into the state);
//     later ones change nothing.
//   - Every tag and section records the highest rate at which it advanced
//     (RateWindowMs windows, from the commands' now_ms), for a restore's
//     jump; the last applied command's index, term and now_ms are kept
//     with the state.
//   - Before the restore fence (set by a restore or recovery) no snowflake
//     worker ID is granted (unavailable) and no section is given an owner.
//   - A snapshot of a newer FormatVersion is refused, never misread.
//
// Planted bugs (internal/faults, only in -tags faults builds):
// snapshot-drops-maxid, seq-no-handover-wait, takeover-no-margin,
// ignore-request-id.
package fsm
