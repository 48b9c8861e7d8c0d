package storage

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/hashicorp/raft"

	"github.com/seqsvr/seqsvr/storage/fsm"
)

// checkNewestSnapshot refuses to start on a data dir whose newest snapshot
// is of a newer format than this binary reads (a rollback after the newer
// release wrote one). It runs before raft starts because raft, when
// Restore fails, quietly falls back to an older snapshot and replays the
// log from there: state this binary would then serve is not what the
// cluster committed. The error names the snapshot, the directory and both
// versions.
func checkNewestSnapshot(snaps raft.SnapshotStore, dir string) error {
	list, err := snaps.List()
	if err != nil || len(list) == 0 {
		return nil // raft reports a store it cannot list itself
	}
	meta, rc, err := snaps.Open(list[0].ID)
	if err != nil {
		return nil // an unreadable snapshot is raft's to skip, as before
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, meta.Size+1))
	if err != nil {
		return nil
	}
	what := fmt.Sprintf("snapshot %s in %s", meta.ID, filepath.Join(dir, meta.ID))
	if err := fsm.CheckSnapshotFormat(what, b); err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	return nil
}
