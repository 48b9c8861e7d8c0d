package backup_test

import (
	"encoding/json"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/storage/backup"
	"github.com/seqsvr/seqsvr/storage/backup/backuptest"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// fuzzNow is the clock the fuzz targets read: the seeds' backups are
// taken a minute before it.
var fuzzNow = time.UnixMilli(1_800_000_000_000)

// FuzzBackupDecode feeds any bytes to Decode and what it accepts to
// Summarize, Problems and Encode: none of them panics, and a decoded
// backup encodes to a file that decodes to the same backup. Seeded with
// a valid backup and every evil one of backuptest.
//
//	go test -run '^$' -fuzz FuzzBackupDecode -fuzztime 15s ./storage/backup/
func FuzzBackupDecode(f *testing.F) {
	backuptest.AddSeeds(f, fuzzNow)
	f.Fuzz(func(t *testing.T, file []byte) {
		b, err := backup.Decode(file)
		if err != nil {
			return
		}
		if _, err := json.Marshal(backup.Summarize(b, len(file))); err != nil {
			t.Fatalf("the summary (inspect -o json) does not marshal: %v", err)
		}
		_ = backup.Problems(b, fuzzNow)
		again, err := backup.Encode(proto.Clone(b).(*seqsvrv1.Backup))
		if err != nil {
			t.Fatalf("a decoded backup does not encode: %v", err)
		}
		b2, err := backup.Decode(again)
		if err != nil {
			t.Fatalf("an encoded backup does not decode: %v", err)
		}
		if b.GetState() != nil {
			b.State.FormatVersion = fsm.FormatVersion // Encode stamps it
		}
		if !proto.Equal(b, b2) {
			t.Fatalf("round trip changed the backup:\n%v\n%v", b, b2)
		}
	})
}
