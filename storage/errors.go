package storage

import "github.com/seqsvr/seqsvr/internal/errs"

// The server's own errors, each of an errs kind. The state machine's
// (worker leases, clocks, section owners) are package fsm's. Everything
// else it returns wraps a kind directly (errs.InvalidArgument,
// errs.NotFound, errs.AlreadyExists, errs.Unavailable) with
// fmt.Errorf("%w: ..."), and a handler answers errs.Connect(err).
var (
	// ErrNotLeader: this member is not the leader; nothing was proposed, so
	// the call may be forwarded to the leader.
	ErrNotLeader = errs.New(errs.Unavailable, "not the raft leader")
	// ErrNoLeader: no leader is known; retry later.
	ErrNoLeader = errs.New(errs.Unavailable, "no raft leader")
	// ErrMemberHeld: AddMember of an ID that a live member holds at
	// another Raft address.
	ErrMemberHeld = errs.New(errs.FailedPrecondition, "node-id held by a live member")
	// ErrOtherCluster: a join between members of two different clusters
	// (their cluster IDs differ).
	ErrOtherCluster = errs.New(errs.FailedPrecondition, "member of another cluster")
	// ErrCallerCluster: a write whose caller follows another cluster (the
	// request's cluster_id): an old member answering at an address the
	// caller knows. Nothing was proposed. Its text begins every such
	// answer's message, which the store client recognises.
	ErrCallerCluster = errs.New(errs.FailedPrecondition, "request for another store cluster")
	// ErrDiskFull: this member's data dir refused a write for lack of
	// space; it refuses writes until a write succeeds again (no restart
	// needed). Unavailable: another member may take the call.
	ErrDiskFull = errs.New(errs.Unavailable, "data dir is full")
	// ErrDiskIO: this member's data dir failed a write or fsync with an
	// I/O error; it refuses writes until it is restarted.
	ErrDiskIO = errs.New(errs.Unavailable, "data dir I/O error")
	// ErrClusterVersion: a command or field of a feature level the cluster
	// has not reached (some member may run an older release).
	ErrClusterVersion = errs.New(errs.FailedPrecondition, "cluster version too low")
)
