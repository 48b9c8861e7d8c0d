//go:build unix

package launch

import (
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// claimPort takes port's lock file in dir without waiting. ok is false
// when another open file holds it (another process's claim); a file that
// cannot be opened claims nothing beyond this process (f nil, ok true).
func claimPort(dir string, port int) (f *os.File, ok bool) {
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(port)), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, true
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err != syscall.EWOULDBLOCK
	}
	return f, true
}
