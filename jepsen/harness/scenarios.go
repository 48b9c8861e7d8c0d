package harness

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seqsvr/seqsvr/internal/faults"
	"github.com/seqsvr/seqsvr/internal/spec"
	"github.com/seqsvr/seqsvr/jepsen/checker"
	"github.com/seqsvr/seqsvr/jepsen/history"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

var (
	storeKills  = []string{"kill-leader", "kill-follower", "kill-all-stores"}
	storePauses = []string{"pause-leader", "pause-follower"}
	partitions  = []string{"partition-leader", "partition-halves", "partition-ring", "partition-bridge", "partition-oneway"}
	allocFaults = []string{"kill-alloc", "pause-alloc", "clock-jump-alloc", "clock-back-restart"}
	// seqFaults move per-key sections: a joining allocsvr, a graceful
	// stop, a death and a stall past the per-key lease.
	seqFaults = []string{"seq-add-alloc", "seq-term-alloc", "seq-kill-alloc", "seq-pause-alloc"}
)

func cat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// Smoke is the short run of `go test`: leader kills, pauses, clock jumps,
// an allocsvr joining and one stalling past its per-key lease, an operator
// deleting and re-creating a served tag and, as root, partitions, for
// about d.
func Smoke(d time.Duration, withPartitions bool) Config {
	f := cat(storeKills, storePauses, []string{"kill-alloc", "clock-jump-alloc", "seq-add-alloc", "seq-pause-alloc", "operator"})
	if withPartitions {
		f = append(f, "partition-leader", "isolate-alloc")
	}
	return Config{Name: "smoke", Duration: d, Faults: f, Partitions: withPartitions, SeqWorkers: 3}
}

// Full is the matrix of `make jepsen`: each scenario stresses one family
// of faults, "mixed" mixes all of them, and "seq" (last, so the others
// keep their seeds) runs the per-key workload.
func Full(d time.Duration, withPartitions bool) []Config {
	out := []Config{
		// kills: allocsvrs live 4-8 s between kills (kill-alloc-slow), so
		// they drain and switch segments between deaths.
		{Name: "kills", Faults: cat(storeKills, []string{"kill-alloc-slow", "operator"}), GapLo: 50 * time.Millisecond, GapHi: 300 * time.Millisecond},
		{Name: "pauses", Faults: cat(storePauses, []string{"pause-alloc"}), GapLo: 50 * time.Millisecond, GapHi: 300 * time.Millisecond},
		{Name: "clock", Faults: []string{"clock-jump-alloc", "clock-back-restart", "kill-follower"}, GapLo: 20 * time.Millisecond, GapHi: 150 * time.Millisecond},
		// membership: members removed, wiped and re-joined, and members
		// losing their disk and restarted with --peers (or, once replaced,
		// the --join they were re-joined with).
		{Name: "membership", Faults: []string{"member-replace", nemesis.LoseDisk, "kill-follower", "pause-follower", "twin-takeover"}, Partitions: withPartitions},
	}
	if withPartitions {
		out = append(out, Config{Name: "partitions", Faults: cat(partitions, []string{"isolate-alloc"}), Partitions: true, GapLo: 50 * time.Millisecond, GapHi: 300 * time.Millisecond})
	}
	mixed := cat(storeKills, storePauses, allocFaults, []string{"member-replace", "twin-takeover", "pause-takeover", "leader-change-resend", "operator"})
	if withPartitions {
		mixed = append(mixed, partitions...)
		mixed = append(mixed, "isolate-alloc")
	}
	out = append(out, Config{Name: "mixed", Faults: mixed, Partitions: withPartitions, GapLo: 50 * time.Millisecond, GapHi: 300 * time.Millisecond})
	// seq: the per-key workload on three allocsvrs while sections move
	// (seqFaults, a twin taking a node over) and the allocsvrs and the
	// store leader are killed, paused and cut off.
	seq := Config{Name: "seq", Faults: cat(seqFaults, []string{"kill-alloc", "pause-alloc", "twin-takeover", "kill-leader", "pause-leader"}),
		Partitions: withPartitions, Allocs: 3, SeqWorkers: 6, StoreWorkers: 2, AllocWorkers: 2, GapLo: 200 * time.Millisecond, GapHi: time.Second}
	if withPartitions {
		seq.Faults = append(seq.Faults, "isolate-alloc", "partition-leader")
	}
	out = append(out, seq)
	// idempotency: reservations whose request_ids are re-sent across a
	// leader change and across a snapshot and restart of every member
	// (snapshots every 20 entries), among leader kills and pauses and a
	// member wiped and re-joined (it catches up from a snapshot).
	out = append(out, Config{Name: "idempotency", Faults: []string{"leader-change-resend", "snapshot-resend", "kill-leader", "pause-leader", "member-replace"},
		StoreArgs: snapshotOften, GapLo: 100 * time.Millisecond, GapHi: 500 * time.Millisecond})
	// takeover: the aimed snowflake faults (see nemesis/aimed.go), one at
	// a time: takeovers at lease expiry with skewed clocks, a holder
	// paused past its lease and resumed while a twin serves, restarts with
	// the clock just below and just above the last issued timestamp.
	out = append(out, Config{Name: "takeover", Faults: []string{"skewed-takeover", "pause-takeover", "restart-below-issued", "restart-above-issued"},
		Partitions: withPartitions, AllocWorkers: 6, GapLo: 100 * time.Millisecond, GapHi: 300 * time.Millisecond})
	if withPartitions {
		// cutoff: an allocsvr cut off from the store for 5-9 s, longer
		// than its buffers last: it serves, drains, answers unavailable
		// and recovers; its IDs must rise within each lifetime and none of
		// its solo tag's be burned (checker.NoBurnedIDs).
		out = append(out, Config{Name: "cutoff", Faults: []string{"isolate-alloc-long", "kill-alloc-slow"}, Partitions: true,
			AllocWorkers: 6, SoloShare: 50, GapLo: 300 * time.Millisecond, GapHi: time.Second})
	}
	// seq-alloc: the per-key workload with faults on the allocsvrs only
	// (the store stays healthy), so guarantee 9's availability check has
	// no store fault to excuse an outage with: every per-key outage must
	// be explained by an allocsvr event within its bound.
	seqAlloc := Config{Name: "seq-alloc", Faults: cat(seqFaults, []string{"kill-alloc", "pause-alloc", "twin-takeover"}),
		Partitions: withPartitions, Allocs: 3, SeqWorkers: 6, StoreWorkers: 1, AllocWorkers: 2, GapLo: 200 * time.Millisecond, GapHi: time.Second}
	if withPartitions {
		seqAlloc.Faults = append(seqAlloc.Faults, "isolate-alloc")
	}
	out = append(out, seqAlloc)
	out = append(out, diskScenario())
	out = append(out, disasterScenario(d, withPartitions)) // last but the upgrade: the others keep their seeds
	// upgrade: the base release's binaries replaced one process at a time
	// by the current build, a leader kill while mixed, an allocsvr and a
	// storesvr rolled back (upgrade.go).
	out = append(out, upgradeScenario())
	// seq-join: allocsvrs join right after the old owner's heartbeat and
	// stop gracefully (seq-add-alloc-aimed), over and over, with the
	// allocsvr's default heartbeat and lease: guarantee 9's 2 s for a
	// start and a graceful stop, with no fault to excuse an outage (see
	// docs/fault-injection.md for what its control runs at 1 s found).
	out = append(out, Config{Name: "seq-join", Faults: []string{"seq-add-alloc-aimed"},
		SeqWorkers: 8, SeqHotKeys: 10, StoreWorkers: 1, AllocWorkers: 1, TagWorkers: 1, SeqStep: 1000,
		SeqHeartbeat: 500 * time.Millisecond, SeqLeaseTTL: spec.DefaultSeqLeaseTTL,
		GapLo: 200 * time.Millisecond, GapHi: 500 * time.Millisecond})
	// lose-disk (after seq-join: the others keep their seeds): members of
	// a StatefulSet lose their volume while another is paused and the
	// leader dies, and come back with the flags they had.
	out = append(out, loseDiskScenario())
	if withPartitions {
		// snowflake-margins (after lose-disk: the others keep their
		// seeds): only the faults aimed at the snowflake margins
		// (nemesis/margin.go), over and over, so that each margin is hit
		// inside (and the clock tolerance outside) several times a run.
		out = append(out, Config{Name: "snowflake-margins", Faults: []string{"skewed-takeover", "fence-skew-takeover"},
			Partitions: true, AllocWorkers: 6, GapLo: 100 * time.Millisecond, GapHi: 300 * time.Millisecond})
	}
	if withPartitions {
		// seq-fence (last: the others keep their seeds): the per-key fence
		// margin attacked (nemesis.SeqFenceSkew), over and over: an owner
		// cut off from the stores serves until its fence while a new
		// leader, its clock 0.9 of the margin ahead, gives its sections
		// away. Ten hot keys, one per section, and a large step, so that
		// the cut-off owner's keys are called often and never run out.
		// A 1 s margin (under a 3 s lease) instead of 0.5 s: the skew,
		// 0.9 s, stays inside the snowflake margins (1 s), and a fence
		// that gives half the margin away serves 0.4 s past the skewed
		// expiry, a window a busy machine's stalls of 100-200 ms do not
		// swallow (0.2 s with a 0.5 s margin: they did). Heartbeats every
		// 100 ms: the others take the sections soon after the expiry.
		out = append(out, Config{Name: "seq-fence", Faults: []string{nemesis.SeqFenceSkew}, Partitions: true,
			Allocs: 3, SeqWorkers: 8, SeqHotKeys: 10, SeqStep: 1000, StoreWorkers: 1, AllocWorkers: 1, TagWorkers: 1,
			SeqFenceMargin: time.Second, SeqLeaseTTL: 3 * time.Second, SeqHeartbeat: 100 * time.Millisecond,
			GapLo: 200 * time.Millisecond, GapHi: 500 * time.Millisecond})
	}
	for i := range out {
		out[i].Duration = d
		if !slices.Contains([]string{"membership", "idempotency", "takeover", "cutoff", "seq-alloc", "disaster", "upgrade", "seq-join", "lose-disk", "seq-fence"}, out[i].Name) {
			out[i].Copies = 2
		}
	}
	return out
}

// loseDiskDomain is the lose-disk scenario's --ordinal-domain: its
// members run in the StatefulSet mode, where every pod on a new volume
// derives --peers (launch.Options.Ordinal).
const loseDiskDomain = "storesvr.seqsvr.test"

// loseDiskScenario is "lose-disk": the lost-disk fault (nemesis.LoseDisk),
// over and over on different members, on a cluster in the StatefulSet
// mode; the membership scenario runs it on --peers. The old leader comes
// back with the longest log and leads again, so leader kills between the
// lost disks move the roles. Snapshots every 20 entries: the wiped
// member catches up from one. The per-key workload too: its sections'
// counters live in the store like the segments.
func loseDiskScenario() Config {
	return Config{Name: "lose-disk", Faults: []string{nemesis.LoseDisk, "kill-leader"}, Ordinal: loseDiskDomain, StoreArgs: snapshotOften, SeqWorkers: 3,
		GapLo: 300 * time.Millisecond, GapHi: time.Second}
}

// snapshotOften makes the stores snapshot every 20 log entries.
var snapshotOften = []string{"--snapshot-threshold", "20", "--snapshot-interval", "300ms"}

// PlantedBug is the run that must catch one bug of internal/faults.
func PlantedBug(bug string, d time.Duration) Config {
	c := Config{Name: "bug-" + bug, Duration: d, Bugs: []string{bug}}
	switch bug {
	case faults.BugReserveBeforeCommit:
		// Concurrent reservations on a leader that answers from its
		// uncommitted state collide; leader kills lose what was answered.
		c.Faults = []string{"kill-leader"}
		c.StoreWorkers = 6
		c.LinTags = 1
	case faults.BugStaleReads:
		// Followers answer reads from their own, lagging state; paused
		// ones lag by whole seconds.
		c.Faults = []string{"pause-follower", "pause-leader"}
	case faults.BugSnapshotDropsMaxID:
		// Snapshot often, then restart every member: they come back from
		// a snapshot that lost max_id and hand out used ranges again.
		c.StoreArgs = snapshotOften
		c.Faults = []string{"kill-all-stores"}
		c.GapLo, c.GapHi = 2*time.Second, 3*time.Second
	case faults.BugNoSelfFence:
		c.Faults = []string{"twin-takeover"}
		c.Allocs = 1
		c.AllocWorkers = 6
		c.GapLo, c.GapHi = 200*time.Millisecond, 300*time.Millisecond
	case faults.BugTakeoverNoMargin:
		// Takeovers at lease expiry, old clock ahead, new one behind.
		c.Faults = []string{"skewed-takeover"}
		c.Allocs, c.AllocWorkers, c.Partitions = 1, 6, true
	case faults.BugRestartIgnoresHWM:
		// Restarts whose clock lands below the last issued timestamp,
		// above the last one reported to the store.
		c.Faults = []string{"restart-below-issued"}
		c.Allocs, c.AllocWorkers, c.Partitions = 1, 6, true
	case faults.BugSwitchDropsCarry:
		// An allocsvr cut off until its buffers run dry: requests of 13
		// to 20 IDs that span the last ones leave them carried (smaller
		// requests would drain the carry while the store is away), and
		// the first segment after the reconnection drops them.
		c.Faults = []string{"isolate-alloc-long"}
		c.Allocs, c.AllocWorkers, c.SoloShare, c.MinCount, c.Partitions = 1, 6, 100, 13, true
		// No Leaf GETs: they take one ID of a shared tag, never the solo
		// one this run watches.
		c.Paths = []string{history.PathH1, history.PathClientH2, history.PathClientH1}
		// Time between cuts to reconnect and load again (the failed loads'
		// backoff runs out first).
		c.GapLo, c.GapHi = 2500*time.Millisecond, 3500*time.Millisecond
	case faults.BugIgnoreRequestID:
		// Every re-send reserves anew.
		c.Faults = []string{"leader-change-resend", "snapshot-resend"}
		c.StoreArgs = snapshotOften
	case faults.BugUngatedNewField:
		// The upgrade: the field is proposed by a current leader while a
		// base member applies (after the mixed leader kill, and on the
		// rolled-back member to the end).
		u := upgradeScenario()
		c.Upgrade, c.SeqWorkers, c.StoreArgs = true, u.SeqWorkers, u.StoreArgs
		// Room for every step (each waits for readiness besides its slot).
		c.Duration = max(d, upgradeMinDuration)
	case faults.BugFrontRepeatsCarry:
		// Only the front's answers are wrong: NextIDs over HTTP/1.1 (a
		// share of every alloc worker's calls) that spans a segment's end.
		// Allocsvrs killed now and then start over with fresh segments;
		// the small steps switch segments every few calls anyway.
		c.Faults = []string{"kill-alloc-slow"}
		c.AllocWorkers = 6
	case faults.BugLocalReads:
		// Followers answer ListTags, ListSpaces, GetSpace and GetRouting
		// from their own state. A paused follower lags by the length of
		// its pause, and the probe reads it the moment it resumes, while
		// the tag workers create and delete life tags and allocsvrs join
		// and leave (the routing version moves) in the meantime.
		c.Faults = []string{"pause-follower", "seq-add-alloc", "seq-term-alloc"}
		c.SeqWorkers = 3
	case faults.BugRestoreNoJump:
		// The disaster scenario: restores whose counters continue where
		// the oldest backup left them.
		d := c.Duration
		c = disasterScenario(d, false)
		c.Name, c.Bugs = "bug-"+bug, []string{bug}
	case faults.BugBlindBootstrap:
		// The lose-disk scenario: the wiped member bootstraps at once and
		// votes the paused one, which lacks the writes, into leadership
		// before the old leader is back.
		d := c.Duration
		c = loseDiskScenario()
		c.Name, c.Bugs, c.Duration = "bug-"+bug, []string{bug}, d
	case faults.BugSeqNoHandoverWait:
		// Allocsvrs join again and again; the store gives the sections
		// that move to them away at once, while their old owners keep
		// serving from memory until their next heartbeat answer or a
		// refused raise (a large step: rarely). Clients call the old
		// owners directly and the new ones through any allocsvr, so the
		// same keys are served by both.
		//
		// The window runs from the moment the workers reach the joining
		// allocsvr (after its start and /readyz, which take longer the
		// busier the machine is) to the old owner's next heartbeat. With
		// plain seq-add-alloc that heartbeat falls anywhere in the
		// interval after the join, and with 1 s heartbeats a busy 2-core
		// machine missed every window of a run. So the joins are aimed
		// (seq-add-alloc-aimed: right after the old owner's heartbeat,
		// a graceful stop), and heartbeats are 3 s apart: each join leaves
		// the old owner serving for seconds, and a stop before it heard of
		// the move gives the sections back to a memory that stays stale.
		// The lease (6 s, fenced 0.5 s early) outlasts a heartbeat
		// answered 2.5 s late. Guarantee 9's bounds (2 s after a start or
		// a graceful stop) assume heartbeats well under a second: with 3 s
		// ones its check may fail here with or without the bug, and is not
		// one of this bug's catchers.
		//
		// Ten hot keys (one per section) instead of 30, and one worker of
		// each other kind, so that a busy machine still makes several
		// calls per moving key within a window: the catch needs one key
		// answered by the new owner and then by the old.
		c.Faults = []string{"seq-add-alloc-aimed"}
		c.SeqWorkers, c.SeqHotKeys = 8, 10
		c.StoreWorkers, c.AllocWorkers, c.TagWorkers = 1, 1, 1
		c.SeqHeartbeat, c.SeqLeaseTTL, c.SeqStep = 3*time.Second, 6*time.Second, 1000
		c.GapLo, c.GapHi = 200*time.Millisecond, 500*time.Millisecond
	}
	return c
}

// Bugs lists the planted bugs the harness must catch: -mode bugs runs
// them all.
func Bugs() []string {
	return append(QuickBugs(), faults.BugTakeoverNoMargin, faults.BugRestartIgnoresHWM, faults.BugIgnoreRequestID, faults.BugSwitchDropsCarry,
		faults.BugRestoreNoJump, faults.BugUngatedNewField, faults.BugLocalReads, faults.BugBlindBootstrap)
}

// QuickBugs are the planted bugs whose runs `make test` repeats (short
// runs that catch them); the others need the aimed faults' longer cycles
// and run in -mode bugs.
func QuickBugs() []string {
	return []string{faults.BugReserveBeforeCommit, faults.BugStaleReads, faults.BugSnapshotDropsMaxID, faults.BugNoSelfFence, faults.BugSeqNoHandoverWait,
		faults.BugFrontRepeatsCarry}
}

// Catchers are the checkers that must report a found violation (not an
// undecided verdict) when bug is planted: the direct symptom of the bug.
func Catchers(bug string) []string {
	switch bug {
	case faults.BugReserveBeforeCommit:
		return []string{checker.Linearizability, checker.SegmentsDisjointName}
	case faults.BugStaleReads:
		return []string{checker.Linearizability}
	case faults.BugSnapshotDropsMaxID:
		return []string{checker.Linearizability, checker.SegmentsDisjointName, checker.SegmentWithinReserved, checker.SegmentUnique}
	case faults.BugNoSelfFence:
		return []string{checker.SnowflakeUnique, checker.SnowflakeExclusive, checker.SnowflakeTimeline}
	case faults.BugSeqNoHandoverWait:
		return []string{checker.SeqOrderName, checker.SeqUniqueName}
	case faults.BugTakeoverNoMargin, faults.BugRestartIgnoresHWM:
		return []string{checker.SnowflakeUnique, checker.SnowflakeTimeline}
	case faults.BugIgnoreRequestID:
		return []string{checker.IdempotentName, checker.Linearizability}
	case faults.BugSwitchDropsCarry:
		return []string{checker.SegmentNoBurned}
	case faults.BugUngatedNewField:
		// The members' states part: the rolled-back member's max_ids
		// stay below the others'. (Porcupine fails too, on any run of
		// the bug: its model is the base release's reservation.)
		return []string{checker.FinalMaxID}
	case faults.BugFrontRepeatsCarry:
		return []string{checker.SegmentUnique, checker.SegmentMonotonic}
	case faults.BugLocalReads:
		return []string{checker.ListingsName, checker.SpaceReadsName}
	case faults.BugBlindBootstrap:
		// The paused member, leading without the acknowledged writes,
		// hands their ranges (segments, per-key sections) out again and
		// answers reads from before them. (The raft logs agree again afterwards: the old leader's
		// tail is overwritten by the new leader's entries, as Raft does
		// with any uncommitted tail.)
		return []string{checker.SegmentsDisjointName, checker.Linearizability, checker.SegmentUnique, checker.SeqUniqueName, checker.SeqOrderName}
	case faults.BugRestoreNoJump:
		return []string{checker.SegmentUnique, checker.SegmentsDisjointName, checker.SegmentWithinReserved, checker.SeqUniqueName, checker.SeqOrderName}
	}
	return nil
}

// Caught reports whether a planted-bug run was caught for the right
// reason: one of the bug's Catchers found a violation. It explains why
// not otherwise.
func Caught(rep *Report, bug string) (bool, string) {
	want := Catchers(bug)
	var failed []string
	for _, r := range rep.Results {
		if r.OK || r.Skipped != "" {
			continue
		}
		if slices.Contains(want, r.Name) && !r.Undecided {
			return true, r.Name
		}
		failed = append(failed, r.Name)
	}
	return false, fmt.Sprintf("none of %q found a violation (failed: %q)", strings.Join(want, "; "), failed)
}
