//go:build unix

package seq

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on path; the kernel drops it when the
// process dies, however it dies.
func lockFile(path string) (release func(), locked bool, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false, errors.New("in use by another process (its per-key lock is held)")
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, true, nil
}
