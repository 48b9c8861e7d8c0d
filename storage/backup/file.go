package backup

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// FormatVersion is the frame's version. 1: the first.
const FormatVersion = 1

const (
	magic     = "SEQSVRBK"
	headerLen = len(magic) + 4 + 8
	sumLen    = sha256.Size
)

// Errors of Decode, each of an errs kind.
var (
	ErrNotBackup     = errs.New(errs.InvalidArgument, "not a seqsvr backup file")
	ErrTruncated     = errs.New(errs.InvalidArgument, "backup file truncated")
	ErrCorrupt       = errs.New(errs.InvalidArgument, "backup file corrupt")
	ErrFutureVersion = errs.New(errs.FailedPrecondition, "backup of a newer format")
)

// Encode frames b as a backup file. It sets the state's format version.
func Encode(b *seqsvrv1.Backup) ([]byte, error) {
	if b.GetState() != nil {
		b.State.FormatVersion = fsm.FormatVersion
	}
	payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("backup: marshal: %w", err)
	}
	out := make([]byte, 0, headerLen+len(payload)+sumLen)
	out = append(out, magic...)
	out = binary.BigEndian.AppendUint32(out, FormatVersion)
	out = binary.BigEndian.AppendUint64(out, uint64(len(payload)))
	out = append(out, payload...)
	sum := sha256.Sum256(out)
	return append(out, sum[:]...), nil
}

// Decode checks and reads a backup file.
func Decode(file []byte) (*seqsvrv1.Backup, error) {
	if len(file) < len(magic) {
		if bytes.HasPrefix([]byte(magic), file) {
			return nil, fmt.Errorf("%w: %d bytes, shorter than the header", ErrTruncated, len(file))
		}
		return nil, fmt.Errorf("%w: it does not start with %q", ErrNotBackup, magic)
	}
	if string(file[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: it does not start with %q", ErrNotBackup, magic)
	}
	if len(file) < headerLen {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrTruncated, len(file), headerLen)
	}
	if v := binary.BigEndian.Uint32(file[len(magic):]); v != FormatVersion {
		if v > FormatVersion {
			return nil, fmt.Errorf("%w: the file's format version is %d, this binary reads up to %d: use a newer seqsvr", ErrFutureVersion, v, FormatVersion)
		}
		return nil, fmt.Errorf("%w: unknown format version %d", ErrCorrupt, v)
	}
	n := binary.BigEndian.Uint64(file[len(magic)+4:])
	if n > uint64(len(file)) {
		// Checked before any sum with n, which could wrap around: the
		// message names the length as the header gives it.
		return nil, fmt.Errorf("%w: %d bytes, the header announces a payload of %d bytes", ErrTruncated, len(file), n)
	}
	want := uint64(headerLen) + n + sumLen
	switch {
	case uint64(len(file)) < want:
		return nil, fmt.Errorf("%w: %d bytes, the header announces %d (a payload of %d)", ErrTruncated, len(file), want, n)
	case uint64(len(file)) > want:
		return nil, fmt.Errorf("%w: %d bytes after the end the header announces (%d bytes)", ErrCorrupt, uint64(len(file))-want, want)
	}
	body := file[:headerLen+int(n)]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], file[len(body):]) {
		return nil, fmt.Errorf("%w: SHA-256 checksum mismatch (the file changed after it was written)", ErrCorrupt)
	}
	var b seqsvrv1.Backup
	if err := proto.Unmarshal(body[headerLen:], &b); err != nil {
		return nil, fmt.Errorf("%w: payload does not decode: %v", ErrCorrupt, err)
	}
	if v := b.GetState().GetFormatVersion(); v > fsm.FormatVersion {
		return nil, fmt.Errorf("%w: the state's format version is %d, this binary reads up to %d: use a newer seqsvr", ErrFutureVersion, v, fsm.FormatVersion)
	}
	return &b, nil
}
