package seq

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/seqsvr/seqsvr/internal/dirlock"
	"github.com/seqsvr/seqsvr/internal/durable"
)

// Files of LoadInstance in the allocsvr's data dir.
const (
	instanceLock = "seq.lock"
	instanceFile = "seq-instance.json"
	// instanceVersion is the durable header's version; files from before
	// the header (the same JSON) read as durable.Unversioned.
	instanceVersion = 1
)

type instanceData struct {
	NodeID     string `json:"node_id"`
	InstanceID string `json:"instance_id"`
}

// LoadInstance gives this process the per-key instance ID of the last
// process that ran node on dir, or a new one, and holds dir's lock until
// release. The lock proves that process is dead, so the store may hand
// its lease straight to this one (a restart after SIGKILL is served at
// once instead of after the old lease expires); it answers every key
// from the committed max_seq on first load, as any new owner does, so
// nothing the dead process handed out is repeated. A process elsewhere
// with the same node ID (a twin) has its own dir, hence its own ID, and
// is refused while this one's lease lives. Where no lock can be taken
// (not unix), every start gets a new ID.
func LoadInstance(dir, node string) (id string, release func(), err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", nil, fmt.Errorf("seq instance: %w", err)
	}
	unlock, err := dirlock.Lock(filepath.Join(dir, instanceLock))
	if err != nil {
		return "", nil, fmt.Errorf("seq instance: data dir %s: %w", dir, err)
	}
	if !dirlock.Supported { // nothing proves the last process dead
		return rand.Text(), unlock, nil
	}
	path := filepath.Join(dir, instanceFile)
	var d instanceData
	_, b, err := durable.Read(path, instanceVersion)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil: // a newer release's file too: it may hold what this one cannot read
		unlock()
		return "", nil, fmt.Errorf("seq instance: %w", err)
	default:
		_ = json.Unmarshal(b, &d) // unreadable: a new ID
	}
	if d.NodeID == node && d.InstanceID != "" {
		return d.InstanceID, unlock, nil
	}
	d = instanceData{NodeID: node, InstanceID: rand.Text()}
	b, _ = json.Marshal(d)
	if err := durable.Write(path, instanceVersion, b, 0o644); err != nil {
		unlock()
		return "", nil, fmt.Errorf("seq instance: %w", err)
	}
	return d.InstanceID, unlock, nil
}
