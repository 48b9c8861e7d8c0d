package harness

import (
	"os"
	"path/filepath"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// diskScenario is "disk": every data dir on a small tmpfs, filled and
// freed (nemesis/diskfull.go) on stores (leader or follower) and
// allocsvrs, among leader pauses and allocsvr kills, under the segment,
// snowflake and per-key load. A full store refuses writes and must
// acknowledge nothing it did not write; a full allocsvr stops snowflake
// IDs; both serve again without a restart. Where no tmpfs can be mounted
// (not root) the data dirs stay on disk and the disk faults skip, saying
// so in the report.
func diskScenario() Config {
	c := Config{Name: "disk", Faults: []string{"disk-full-store", "disk-full-alloc", "pause-leader", "kill-alloc"},
		SeqWorkers: 3, GapLo: 200 * time.Millisecond, GapHi: time.Second}
	if canMountTmpfs() {
		c.DataDirTmpfs = diskTmpfsBytes
	}
	return c
}

// diskTmpfsBytes is each data dir's tmpfs: room for a store's Raft log
// between snapshots and two snapshots under the harness's load, so only
// the fault fills it. 64 MiB was too small once the load went through
// every serving path (the coverage gate's load): a full 100 s run left s3 short of room
// for the log it had to catch up on (it flapped full/free to the end and
// the final read found it behind), which is the disk really being full,
// not the fault.
const diskTmpfsBytes = 256 << 20

// canMountTmpfs mounts and unmounts a small tmpfs to learn whether this
// process may (root, or CAP_SYS_ADMIN).
func canMountTmpfs() bool {
	dir, err := os.MkdirTemp("", "seqsvr-tmpfs-probe")
	if err != nil {
		return false
	}
	defer os.RemoveAll(dir)
	probe := filepath.Join(dir, "m")
	if launch.MountTmpfs(probe, 1<<20) != nil {
		return false
	}
	return launch.Unmount(probe) == nil
}
