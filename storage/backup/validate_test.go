package backup_test

import (
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/storage/backup"
	"github.com/seqsvr/seqsvr/storage/backup/backuptest"
)

// A backup the real state machine built passes; each evil file decodes
// (frame and checksum intact) and is refused as invalid, naming its
// problem.
func TestValidateEvilFiles(t *testing.T) {
	now := time.Now()
	if err := backup.Validate(backuptest.Valid(now), now); err != nil {
		t.Fatalf("a valid backup refused: %v", err)
	}
	for _, e := range backuptest.Evils(now) {
		t.Run(e.Name, func(t *testing.T) {
			b, err := backup.Decode(e.File)
			if err != nil {
				t.Fatalf("decode: %v (the evil files are intact in their frame)", err)
			}
			err = backup.Validate(b, now)
			if !backup.IsInvalid(err) || !strings.Contains(err.Error(), e.Want) {
				t.Fatalf("got %v, want ErrInvalid naming %q", err, e.Want)
			}
		})
	}
}
