package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Backups into a directory: what a scheduled job (a Kubernetes CronJob
// running the image, which has no shell) needs to keep the newest few
// without a script around seqctl.

// backupName is the file name of a backup taken at t: UTC to the
// millisecond, so names sort by time and two runs never share one.
func backupName(t time.Time) string {
	return "seqsvr-" + t.UTC().Format("20060102T150405.000Z") + ".bak"
}

// isBackupName: a name backupName made, the only files pruneBackups
// removes.
func isBackupName(name string) bool {
	stamp, ok := strings.CutPrefix(name, "seqsvr-")
	if stamp, ok = strings.CutSuffix(stamp, ".bak"); !ok {
		return false
	}
	_, err := time.Parse("20060102T150405.000Z", stamp)
	return err == nil
}

// backupTarget is where a backup of now goes: path itself, or, for a
// directory (an existing one, or a path ending in /), a new file in it.
// keep (the newest backups to leave in the directory, 0 for all) needs a
// directory.
func backupTarget(path string, keep int, now time.Time) (file, dir string, err error) {
	if keep < 0 {
		return "", "", usagef("--keep %d: want 0 (keep all) or more", keep)
	}
	fi, statErr := os.Stat(path)
	if strings.HasSuffix(path, "/") || statErr == nil && fi.IsDir() {
		if statErr != nil {
			return "", "", statErr
		}
		return filepath.Join(path, backupName(now)), path, nil
	}
	if keep > 0 {
		return "", "", usagef("--keep needs a directory to write into (DIR/), not the file %s", path)
	}
	return path, "", nil
}

// pruneBackups removes the oldest backups of dir (by name, which sorts by
// time) beyond the newest keep, and returns what it removed. Other files
// are left alone.
func pruneBackups(dir string, keep int) ([]string, error) {
	if keep <= 0 {
		return nil, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && isBackupName(e.Name()) {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var removed []string
	var errs []error
	for _, n := range names[:max(0, len(names)-keep)] {
		p := filepath.Join(dir, n)
		if err := os.Remove(p); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, p)
	}
	return removed, errors.Join(errs...)
}

// backupTo is `seqctl backup PATH [--keep N]`: the backup into PATH's
// file, then, for a directory, the oldest beyond the newest keep removed
// (only once the new one is written, so a failed run removes nothing).
func (a *app) backupTo(ctx context.Context, path string, keep int) error {
	file, dir, err := backupTarget(path, keep, time.Now())
	if err != nil {
		return err
	}
	if err := a.backup(ctx, file); err != nil {
		return err
	}
	removed, err := pruneBackups(dir, keep)
	for _, r := range removed {
		fmt.Fprintf(a.stderr, "seqctl: removed %s (--keep %d)\n", r, keep)
	}
	return err
}
