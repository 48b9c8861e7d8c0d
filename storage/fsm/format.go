package fsm

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// SnapshotFormat is the newest snapshot format this binary reads. A
// snapshot of the base release carries none and is format 1; later ones
// carry it in FSMSnapshot.format_version (field 15), which a later
// release raises when a reader of the previous format would misread its
// snapshots.
const SnapshotFormat = 1

// snapshotFormatField is FSMSnapshot.format_version's field number. It is
// read from the wire, not through the generated struct, so that the check
// holds in a binary whose proto predates the field too.
const snapshotFormatField = 15

// ErrNewerFormat: a snapshot (or other persisted state) written by a newer
// release, in a format this binary would misread.
var ErrNewerFormat = errs.New(errs.FailedPrecondition, "state of a newer format")

// SnapshotFormatOf is the format version of a persisted FSMSnapshot: its
// format_version field, or 1 when absent (the base release wrote none).
func SnapshotFormatOf(b []byte) (uint64, error) {
	v := uint64(1)
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, fmt.Errorf("storage: decode snapshot: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if num == snapshotFormatField && typ == protowire.VarintType {
			x, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return 0, fmt.Errorf("storage: decode snapshot: %w", protowire.ParseError(m))
			}
			v, b = max(x, 1), b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return 0, fmt.Errorf("storage: decode snapshot: %w", protowire.ParseError(m))
		}
		b = b[m:]
	}
	return v, nil
}

// CheckSnapshotFormat refuses a persisted FSMSnapshot of a newer format
// than SnapshotFormat, naming both versions and what (the snapshot's ID or
// file).
func CheckSnapshotFormat(what string, b []byte) error {
	v, err := SnapshotFormatOf(b)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if v > SnapshotFormat {
		return fmt.Errorf("%w: %s has snapshot format version %d, this binary (format %d) reads up to %d: run a release that reads it",
			ErrNewerFormat, what, v, SnapshotFormat, SnapshotFormat)
	}
	return nil
}
