package storeclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/seqsvr/seqsvr/internal/durable"
)

// Followed-cluster file in the allocsvr's data dir.
const (
	followedFile = "store-cluster.json"
	// followedVersion is the durable header's version of followedFile.
	followedVersion = 1
)

// loadFollowed reads the identity an earlier process on dir followed last;
// the zero Identity when dir is "" or holds none. A file of a newer
// format is refused: it may name a cluster this release would misorder.
func loadFollowed(dir string) (Identity, error) {
	if dir == "" {
		return Identity{}, nil
	}
	path := filepath.Join(dir, followedFile)
	_, b, err := durable.Read(path, followedVersion)
	if errors.Is(err, fs.ErrNotExist) {
		return Identity{}, nil
	}
	if err != nil {
		return Identity{}, fmt.Errorf("store client: %w", err)
	}
	var id Identity
	if err := json.Unmarshal(b, &id); err != nil {
		return Identity{}, fmt.Errorf("store client: %s does not decode: %w (remove it only if no old store cluster can come back)", path, err)
	}
	return id, nil
}

// saveFollowed records id in dir, durably, before the client uses the
// cluster it names: a restart then refuses every cluster this one
// outranked, even if only old members answer at first.
func saveFollowed(dir string, id Identity) error {
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("store client: remember the followed cluster: %w", err)
	}
	b, _ := json.Marshal(id)
	if err := durable.Write(filepath.Join(dir, followedFile), followedVersion, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("store client: remember the followed cluster: %w", err)
	}
	return nil
}
