//go:build unix

package dirlock

import (
	"fmt"
	"os"
	"syscall"
)

// Supported: flock proves the holder alive.
const Supported = true

// Lock takes an exclusive, non-blocking flock on path (created if need
// be) and answers ErrHeld at once if another holder has it.
func Lock(path string) (release func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w (%v)", path, ErrHeld, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
