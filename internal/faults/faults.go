// Package faults plants known bugs and clock skew for the fault-injection
// harness (jepsen/). It does anything only in binaries built with
// `-tags faults`; in a normal build Enabled is false, Bug always answers
// false and the admin handler is nil, so production code pays one constant
// branch the compiler removes.
//
// Planted bugs are named by the SEQSVR_FAULTS_BUGS environment variable
// (comma-separated) when the process starts. The names in use:
//
//	reserve-before-commit  storage: ReserveSegment answers before Raft commits
//	stale-reads            storage: GetTag/ListTags skip VerifyLeader and the barrier
//	no-self-fence          alloc: snowflake IDs keep flowing after the lease is lost
//	snapshot-drops-maxid   storage: snapshots store max_id as 0
//	seq-no-handover-wait   storage: rebalance moves a live owner's sections at once
//	takeover-no-margin     storage: a worker-ID takeover's floor lacks the lease TTL
//	ignore-request-id      storage: ReserveSegment ignores the request_id record
//	restart-ignores-hwm    alloc: a restart's snowflake floor ignores the local high-water mark
//	switch-drops-carry     alloc: a segment switch drops the IDs carried from a failed request
//	front-repeats-carry    alloc: the HTTP/1.1 front's NextIDs answer repeats the last ID of a carried range
//	restore-no-jump        storesvr: --restore and --recover jump no counter (every jump computes 0)
//	ungated-new-field      storage: reservations carry a field the base release ignores, without the cluster-version gate
//	local-reads            storage: ListTags, ListSpaces, GetSpace and GetRouting answer from the member's own state
//	blind-bootstrap        storage: a member without its Raft log and with --peers bootstraps at once, asking no one
package faults

import "time"

// Bug names, so a typo is a compile error.
const (
	BugReserveBeforeCommit = "reserve-before-commit"
	BugStaleReads          = "stale-reads"
	BugNoSelfFence         = "no-self-fence"
	BugSnapshotDropsMaxID  = "snapshot-drops-maxid"
	BugSeqNoHandoverWait   = "seq-no-handover-wait"
	BugTakeoverNoMargin    = "takeover-no-margin"
	BugIgnoreRequestID     = "ignore-request-id"
	BugRestartIgnoresHWM   = "restart-ignores-hwm"
	BugSwitchDropsCarry    = "switch-drops-carry"
	BugFrontRepeatsCarry   = "front-repeats-carry"
	BugRestoreNoJump       = "restore-no-jump"
	BugUngatedNewField     = "ungated-new-field"
	BugLocalReads          = "local-reads"
	BugBlindBootstrap      = "blind-bootstrap"
)

// HostsEnv names a hosts file (lines "IP NAME...") whose names a faults
// build resolves to those addresses, for the fault harness only: a
// StatefulSet's members address each other as NAME-ORDINAL.DOMAIN, and on
// one machine those names must reach the members' own loopback (or
// network namespace) addresses without touching the machine's /etc/hosts
// or DNS. Names not in the file are answered "no such host". Other builds
// ignore it.
const HostsEnv = "SEQSVR_FAULTS_HOSTS"

// Now is the wall clock every time-reading part of the service should use
// when it has no injected Clock: time.Now plus the skew set through the admin
// handler (always zero without -tags faults).
func Now() time.Time {
	if !Enabled {
		return time.Now()
	}
	return time.Now().Add(ClockOffset())
}
