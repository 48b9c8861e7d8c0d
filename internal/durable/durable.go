// Package durable writes and reads small files that must survive a crash
// whole: the snowflake high-water mark, the per-key instance ID, and any
// other few-hundred-byte state a process keeps in its data dir.
//
// Guarantees: after Write returns nil, the new content is on disk and a
// crash at any later moment reads it back; a crash during Write leaves
// either the old content or the new, never a mix or an empty file (the
// content goes to a temp file in the same directory, is fsync'd, renamed
// over the file, and the directory is fsync'd so the rename itself is
// durable). A stale temp file left by a crash is never read.
//
// Every file starts with a one-line header naming its format version
// ("seqsvr-format 2\n"), so a later release can change the content and
// an older one refuses what it cannot read instead of misreading it:
// Read fails with ErrNewerFormat, naming the file and both versions. A
// file written before the header existed has no header; Read returns it
// whole as version 0, so data dirs from older releases keep working.
package durable

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// header starts every file Write writes; the version and a newline follow.
const header = "seqsvr-format "

// Unversioned is the version Read reports for a file without the header
// (written by a release before this package).
const Unversioned = 0

// ErrNewerFormat: the file was written by a newer release in a format
// this one does not know. Failed precondition: the data dir needs that
// release (or an upgrade of this one), not a retry.
var ErrNewerFormat = errs.New(errs.FailedPrecondition, "file format newer than this release reads")

// step names the points of Write a test can stop at (see testHook).
type step string

const (
	stepSynced  step = "temp written and synced" // before the rename
	stepRenamed step = "renamed"                 // before the directory sync
)

// testHook, when set (tests only), is called at each step; an error
// stops Write there, as a crash would, except that the temp file is
// removed.
var testHook func(step) error

// Write replaces path with the header for version (>= 1) and data.
func Write(path string, version int, data []byte, perm os.FileMode) error {
	if version < 1 {
		return fmt.Errorf("durable: %s: version %d, want >= 1", path, version)
	}
	buf := make([]byte, 0, len(header)+4+len(data))
	buf = append(strconv.AppendInt(append(buf, header...), int64(version), 10), '\n')
	return replace(path, append(buf, data...), perm)
}

// WriteFile replaces path with data as it is, without the header, with
// Write's guarantees: for a file whose content carries its own format
// version (a backup), which Read would take for version 0.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return replace(path, data, perm)
}

// replace writes content to a synced temp file in path's directory,
// renames it over path and syncs the directory.
func replace(path string, content []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("durable: %w", err)
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name()) // best effort; a leftover is never read
		}
	}()
	if _, err = tmp.Write(content); err == nil {
		err = tmp.Chmod(perm)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = hook(stepSynced)
	}
	if err != nil {
		return fmt.Errorf("durable: writing %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("durable: %w", err)
	}
	if err := hook(stepRenamed); err != nil {
		return fmt.Errorf("durable: writing %s: %w", path, err)
	}
	return syncDir(dir)
}

func hook(s step) error {
	if testHook == nil {
		return nil
	}
	return testHook(s)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("durable: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("durable: syncing %s: %w", dir, err)
	}
	return nil
}

// Read returns path's format version and content. A file without the
// header is version Unversioned with all its bytes as content. A version
// above newest is ErrNewerFormat, naming the file and both versions.
// A missing file is an error matching fs.ErrNotExist.
func Read(path string, newest int) (version int, data []byte, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, nil, err
	}
	rest, ok := bytes.CutPrefix(b, []byte(header))
	if !ok {
		return Unversioned, b, nil
	}
	line, data, ok := bytes.Cut(rest, []byte{'\n'})
	v, perr := strconv.Atoi(string(line))
	if !ok || perr != nil || v < 1 {
		return 0, nil, fmt.Errorf("durable: %s: unreadable format header %q", path, b[:min(len(b), len(header)+len(line))])
	}
	if v > newest {
		return v, nil, fmt.Errorf("%w: %s has format version %d; this release reads versions up to %d", ErrNewerFormat, path, v, newest)
	}
	return v, data, nil
}
