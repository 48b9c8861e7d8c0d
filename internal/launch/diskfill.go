package launch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// FillFile is the name of the file Fill writes in a directory.
const FillFile = ".seqsvr-disk-fill"

// Fill writes dir/FillFile until the file system holding dir has no room
// left (ENOSPC or EDQUOT), and returns the file's path and size. Remove the
// file (Unfill) to give the room back. Any other write error is returned.
func Fill(dir string) (string, int64, error) {
	path := filepath.Join(dir, FillFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		if errors.Is(err, syscall.ENOSPC) {
			return path, 0, nil
		}
		return "", 0, fmt.Errorf("fill %s: %w", dir, err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var n int64
	for len(buf) > 0 {
		m, err := f.Write(buf)
		n += int64(m)
		switch {
		case err == nil:
		case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
			// Smaller writes take what the big one left.
			buf = buf[:len(buf)/2]
		default:
			return path, n, fmt.Errorf("fill %s: %w", dir, err)
		}
	}
	return path, n, f.Sync()
}

// Unfill removes the file Fill wrote in dir (absent is fine).
func Unfill(dir string) error {
	err := os.Remove(filepath.Join(dir, FillFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}
