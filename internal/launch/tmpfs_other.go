//go:build !linux

package launch

import "errors"

// MountTmpfs needs Linux.
func MountTmpfs(string, int64) error { return errors.New("tmpfs mounts need Linux") }

// Unmount needs Linux.
func Unmount(string) error { return errors.New("tmpfs mounts need Linux") }

// OnTmpfs is false where MountTmpfs cannot work.
func OnTmpfs(string) bool { return false }
