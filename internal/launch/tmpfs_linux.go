package launch

import (
	"fmt"
	"os"
	"syscall"
)

// MountTmpfs mounts a tmpfs of size bytes on dir (created if missing), so
// a data dir can be filled in a test without filling the machine's disk.
// It needs CAP_SYS_ADMIN (root). Undo it with Unmount.
func MountTmpfs(dir string, size int64) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}

// Unmount detaches the file system mounted on dir; it is gone once the
// last process using it lets go.
func Unmount(dir string) error {
	if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
		return fmt.Errorf("unmount %s: %w", dir, err)
	}
	return nil
}

// tmpfsMagic is statfs(2)'s f_type of a tmpfs.
const tmpfsMagic = 0x01021994

// OnTmpfs reports whether dir is on a tmpfs: a disk-full fault fills only
// such a file system, never the machine's disk.
func OnTmpfs(dir string) bool {
	var st syscall.Statfs_t
	return syscall.Statfs(dir, &st) == nil && st.Type == tmpfsMagic
}
