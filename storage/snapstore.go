package storage

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/raft"
)

// snapshotTmp is the suffix raft's file snapshot store gives a snapshot
// directory until the snapshot is complete.
const snapshotTmp = ".tmp"

// cleanSnapshots is raft's file snapshot store minus its litter: when
// Create fails after making the snapshot's directory (a full disk refuses
// meta.json), raft returns the error and leaves the directory behind, and
// a member retrying snapshots on a full disk would pile them up. Such a
// directory is removed at once; ones left by a crash are removed at start
// (reapSnapshotTmp). Raft ignores them either way; they only take space.
type cleanSnapshots struct {
	raft.SnapshotStore
	dir string // the store's directory (DataDir/snapshots)
	log *slog.Logger
}

func (c cleanSnapshots) Create(version raft.SnapshotVersion, index, term uint64, conf raft.Configuration, confIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := c.SnapshotStore.Create(version, index, term, conf, confIndex, trans)
	if err != nil {
		// raft names the directory term-index-milliseconds.
		prefix := fmt.Sprintf("%d-%d-", term, index)
		c.remove(func(name string) bool { return strings.HasPrefix(name, prefix) })
		c.log.Warn("snapshot failed; the member carries on with its log and tries again at the next threshold", "dir", c.dir, "err", err)
	}
	return sink, err
}

// remove deletes the unfinished snapshot directories whose name match.
func (c cleanSnapshots) remove(match func(string) bool) {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if name := e.Name(); e.IsDir() && strings.HasSuffix(name, snapshotTmp) && match(name) {
			if err := os.RemoveAll(filepath.Join(c.dir, name)); err != nil {
				c.log.Warn("cannot remove an unfinished snapshot", "path", filepath.Join(c.dir, name), "err", err)
			}
		}
	}
}

// reapSnapshotTmp removes every unfinished snapshot directory; call it
// before raft starts, when none can be in progress.
func (c cleanSnapshots) reapSnapshotTmp() {
	c.remove(func(string) bool { return true })
}
