package harness

import (
	"fmt"
	"strings"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/checker"
)

// Upgrade is what the upgrader did, saved in final.json; Check turns it
// into the UpgradeName verdict.
type Upgrade struct {
	Base        string `json:"base"` // commit (and version) of the base release
	StoresDone  int    `json:"stores_done"`
	AllocsDone  int    `json:"allocs_done"`
	LeaderKills int    `json:"leader_kills"`
	// Mixed is how long base and current binaries served together
	// during the upgrade (first swap to last), before the rollbacks;
	// StoresMixed, how long the storesvrs alone were mixed.
	Mixed       time.Duration `json:"mixed"`
	StoresMixed time.Duration `json:"stores_mixed"`
	// NewLeaderMixed is how long a storesvr on the new binary led while
	// another ran the base release (killLeaderUntilNew): the stretch in
	// which the cluster version must not rise.
	NewLeaderMixed time.Duration `json:"new_leader_mixed,omitempty"`
	// ClusterVersion is what the wait for the cluster version said
	// (clusterversion.go); ClusterVersionStuck, that it did not rise.
	ClusterVersion      string `json:"cluster_version,omitempty"`
	ClusterVersionStuck bool   `json:"cluster_version_stuck,omitempty"`
	// Rollbacks are the members put back on the base binary: a storesvr
	// follower, then an allocsvr.
	Rollbacks []Rollback `json:"rollbacks,omitempty"`
	// Stores and Allocs are the counts of the cluster, what "done" means.
	Stores int    `json:"stores"`
	Allocs int    `json:"allocs"`
	Err    string `json:"error,omitempty"`
	// Timeline is which binary each member ran when, and the cluster
	// version over time; nil in a folder saved before runs recorded it
	// (then the timing is not judged, and the verdict says so).
	Timeline *Timeline `json:"timeline,omitempty"`
}

// Rollback is one member put back on the base binary and what it did:
// "served" (ready, and still running when the load stopped), "refused"
// (exited without a panic; Log has its last lines), "crashed" (a panic or
// a fatal runtime error) or "not ready".
type Rollback struct {
	Member string   `json:"member"`
	Result string   `json:"result"`
	Log    []string `json:"log,omitempty"`
}

// upgradeRollbacks is how many members the scenario rolls back.
const upgradeRollbacks = 2

// UpgradeName is the upgrade scenario's own verdict.
const UpgradeName = "upgrade steps ran; rolled-back members served or refused cleanly"

// Verdict checks that every step ran, no rollback crashed, and the
// cluster version rose when the timeline allows, never before
// (Timeline.check).
//
// Starting and stopping: a swapped or rolled-back process answers 503
// until it is ready, which it must be within readyWait; a rolled-back one
// may instead exit without a panic ("refused"); a base-release storesvr's
// ClusterStatus carries no cluster version, which the timeline does not
// read as one.
func (u *Upgrade) Verdict() checker.Result {
	r := checker.Result{Name: UpgradeName, Checked: u.StoresDone + u.AllocsDone + u.LeaderKills + len(u.Rollbacks)}
	var miss []string
	if u.StoresDone < u.Stores {
		miss = append(miss, fmt.Sprintf("%d of %d storesvrs upgraded", u.StoresDone, u.Stores))
	}
	if u.AllocsDone < u.Allocs {
		miss = append(miss, fmt.Sprintf("%d of %d allocsvrs upgraded", u.AllocsDone, u.Allocs))
	}
	if u.LeaderKills == 0 {
		miss = append(miss, "the leader was never killed while versions were mixed")
	}
	if u.ClusterVersionStuck {
		miss = append(miss, "cluster version: "+u.ClusterVersion)
	}
	if len(u.Rollbacks) < upgradeRollbacks {
		miss = append(miss, fmt.Sprintf("%d of %d rollbacks", len(u.Rollbacks), upgradeRollbacks))
	}
	var rolled []string
	for _, rb := range u.Rollbacks {
		switch rb.Result {
		case "served":
			rolled = append(rolled, rb.Member+" served")
		case "refused":
			rolled = append(rolled, fmt.Sprintf("%s refused (%s)", rb.Member, strings.Join(rb.Log, " | ")))
		default:
			miss = append(miss, fmt.Sprintf("rollback of %s: %s: %s", rb.Member, rb.Result, strings.Join(rb.Log, " | ")))
		}
	}
	if u.Err != "" {
		miss = append(miss, u.Err)
	}
	timing := "timing not recorded (a folder saved before runs recorded it)"
	if u.Timeline != nil {
		var bad []string
		bad, timing = u.Timeline.check()
		miss = append(miss, bad...)
	}
	if len(miss) > 0 {
		r.Detail = strings.Join(miss, "; ")
		return r
	}
	r.OK = true
	r.Detail = fmt.Sprintf("from %s: %d storesvrs and %d allocsvrs replaced, leader killed %d×, versions mixed for %s (storesvrs %s), cluster version %s; rolled back to the base: %s; timing: %s; %s",
		u.Base, u.StoresDone, u.AllocsDone, u.LeaderKills, u.Mixed.Round(100*time.Millisecond), u.StoresMixed.Round(100*time.Millisecond),
		u.ClusterVersion, strings.Join(rolled, ", "), timing, newLeaderNote(u.NewLeaderMixed))
	return r
}
