package harness

import "time"

// diskScenario is "disk": every data dir on a small tmpfs, filled and
// freed (nemesis/diskfull.go) on stores (leader or follower) and
// allocsvrs, among leader pauses and allocsvr kills, under the segment,
// snowflake and per-key load. A full store refuses writes and must
// acknowledge nothing it did not write; a full allocsvr stops snowflake
// IDs; both serve again without a restart. Run as root (tmpfs mounts;
// the disk faults skip elsewhere).
func diskScenario() Config {
	return Config{Name: "disk", Faults: []string{"disk-full-store", "disk-full-alloc", "pause-leader", "kill-alloc"},
		SeqWorkers: 3, DataDirTmpfs: diskTmpfsBytes, GapLo: 200 * time.Millisecond, GapHi: time.Second}
}

// diskTmpfsBytes is each data dir's tmpfs: room for a store's Raft log
// between snapshots and two snapshots under the harness's load, so only
// the fault fills it.
const diskTmpfsBytes = 64 << 20
