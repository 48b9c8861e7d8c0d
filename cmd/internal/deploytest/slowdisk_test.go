package deploytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// blkioThrottle is the cgroup v1 blkio controller's write-IOPS limit of
// the root group: a limit there applies to every write to the device,
// the file system journal's included.
const blkioThrottle = "/sys/fs/cgroup/blkio/blkio.throttle.write_iops_device"

// slowDiskSupported says why a slow disk cannot be made here ("" when it
// can): it needs root, loop devices and the cgroup v1 blkio controller.
func slowDiskSupported() string {
	if os.Geteuid() != 0 {
		return "needs root (a loop device, a mount)"
	}
	if _, err := os.Stat(blkioThrottle); err != nil {
		return "no cgroup v1 blkio throttle (" + blkioThrottle + ")"
	}
	for _, bin := range []string{"losetup", "mkfs.ext4", "mount", "umount"} {
		if _, err := exec.LookPath(bin); err != nil {
			return "no " + bin
		}
	}
	return ""
}

// slowDisk is an ext4 file system on a loop device of its own, mounted
// at a directory, whose writes can be limited to a few per second: a
// disk whose fsync takes a hundred milliseconds and more.
type slowDisk struct {
	t   *testing.T
	dev string // /dev/loopN
	num string // MAJOR:MINOR
	dir string
}

// mountSlowDisk makes a 64 MiB ext4 image in scratch, attaches it to a
// free loop device and mounts it at dir (which must exist and be empty).
// The test's end lifts the limit, unmounts it and detaches the device.
func mountSlowDisk(t *testing.T, scratch, dir string) *slowDisk {
	t.Helper()
	img := filepath.Join(scratch, "disk.img")
	run := func(name string, args ...string) string {
		t.Helper()
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	run("mkfs.ext4", "-q", "-F", img)
	d := &slowDisk{t: t, dir: dir}
	d.dev = run("losetup", "-f", "--show", img)
	t.Cleanup(func() {
		d.limit(0)
		exec.Command("umount", "-l", dir).Run()
		exec.Command("losetup", "-d", d.dev).Run()
	})
	var major, minor uint64
	if _, err := fmt.Sscanf(run("stat", "-c", "%t:%T", d.dev), "%x:%x", &major, &minor); err != nil {
		t.Fatal(err)
	}
	d.num = fmt.Sprintf("%d:%d", major, minor)
	run("mount", d.dev, dir)
	return d
}

// limit caps the device's writes at iops a second; 0 lifts the cap.
func (d *slowDisk) limit(iops int) {
	if err := os.WriteFile(blkioThrottle, []byte(fmt.Sprintf("%s %d\n", d.num, iops)), 0o644); err != nil && iops != 0 {
		d.t.Fatal(err)
	}
}
