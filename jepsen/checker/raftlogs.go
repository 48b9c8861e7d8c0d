package checker

import "fmt"

// RaftLogsName is the checker comparing the members' raft logs.
const RaftLogsName = "raft logs identical across members"

// RaftLogs is what the harness found comparing every member's raft log,
// entry by entry, from the highest first index up to the applied index
// they reached together (entries past it may differ: they are not
// committed). An index is compared across the members that hold it: a
// member that installed a snapshot keeps the log it had and appends after
// the snapshot, so it lacks the entries the snapshot covers (Missing).
// Nil Diff and Err: every entry compared was the same.
type RaftLogs struct {
	Members  []string `json:"members"`
	From     uint64   `json:"from"`
	To       uint64   `json:"to"`
	Compared uint64   `json:"compared"`
	// Missing counts, per member, the indexes in From..To it does not hold.
	Missing map[string]uint64 `json:"missing,omitempty"`
	// Diffs counts the indexes whose entries differ; Diff describes the
	// first (index, each member's term, type and command).
	Diffs int    `json:"diffs,omitempty"`
	Diff  string `json:"diff,omitempty"`
	// Err: the logs could not be read or compared.
	Err string `json:"err,omitempty"`
}

// RaftLogsAgree passes when every index compared held the same entry
// (term, type and bytes) on every member. Raft's log matching property
// promises that for committed entries; a difference means the members'
// states may differ too, whatever the other checkers saw (raft's
// heartbeat fast path, which let a deposed leader stamp queued entries
// with a newer term, hashicorp/raft#695, made one in the disk scenario).
func RaftLogsAgree(r *RaftLogs) Result {
	switch {
	case r == nil:
		return Result{Name: RaftLogsName, OK: false, Undecided: true, Detail: "no raft logs were compared"}
	case r.Err != "":
		return Result{Name: RaftLogsName, OK: false, Undecided: true, Detail: "raft logs not compared: " + r.Err}
	case r.Diffs > 0:
		return fail(RaftLogsName, int(r.Compared), "%d of %d indexes (%d..%d) differ between %v; first: %s",
			r.Diffs, r.Compared, r.From, r.To, r.Members, r.Diff)
	case r.Compared == 0:
		return Result{Name: RaftLogsName, OK: false, Undecided: true, Detail: "no index held by two members"}
	}
	res := pass(RaftLogsName, int(r.Compared), "%d entries (%d..%d) the same on %v", r.Compared, r.From, r.To, r.Members)
	for _, m := range r.Members {
		if n := r.Missing[m]; n > 0 {
			res.Detail += fmt.Sprintf("; %s lacks %d (covered by a snapshot it installed)", m, n)
		}
	}
	return res
}
