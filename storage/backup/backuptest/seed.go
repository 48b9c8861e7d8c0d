package backuptest

import (
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/storage/backup"
)

// AddSeeds seeds a fuzz target over backup files with a valid backup and
// every evil one, all taken a minute before now.
func AddSeeds(f *testing.F, now time.Time) {
	f.Helper()
	valid, err := backup.Encode(Valid(now))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	for _, e := range Evils(now) {
		f.Add(e.File)
	}
}
