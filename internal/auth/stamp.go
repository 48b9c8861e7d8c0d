package auth

import (
	"crypto/sha256"
	"os"
	"time"
)

// recheck is how often a credential file is looked at again: a rotated
// Secret or file takes effect within about this long, with no signal.
const recheck = time.Second

// fileStamp tells whether a file changed. The digest is in it because a
// rewrite within one timestamp tick to the same size (one token for
// another) leaves the rest equal. A Kubernetes Secret volume swaps a
// symlink: the path's target changes, and so does what is read here.
type fileStamp struct {
	mod  time.Time
	size int64
	sum  [sha256.Size]byte
}

// readStamped reads path and stamps what was read.
func readStamped(path string) ([]byte, fileStamp, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fileStamp{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fileStamp{}, err
	}
	return b, fileStamp{fi.ModTime(), int64(len(b)), sha256.Sum256(b)}, nil
}
