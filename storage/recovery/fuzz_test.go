package recovery_test

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/storage/backup"
	"github.com/seqsvr/seqsvr/storage/backup/backuptest"
	"github.com/seqsvr/seqsvr/storage/fsm"
	"github.com/seqsvr/seqsvr/storage/recovery"
)

// fuzzNow is the clock of the restore: the seeds' backups are taken a
// minute before it.
var fuzzNow = time.UnixMilli(1_800_000_000_000)

// FuzzRestorePrepare runs what storesvr --restore runs on any bytes:
// decode, validate, prepare the new cluster's state, then load it into a
// state machine and serve from it (reserve a segment of every tag,
// register a worker and an allocsvr past the restore fence, read every
// space's routing). Nothing panics; a backup that passes validation
// prepares, and no counter goes backwards. Seeded with a valid backup
// and every evil one of backuptest.
//
//	go test -run '^$' -fuzz FuzzRestorePrepare -fuzztime 15s ./storage/recovery/
func FuzzRestorePrepare(f *testing.F) {
	backuptest.AddSeeds(f, fuzzNow)
	f.Fuzz(func(t *testing.T, file []byte) {
		b, err := backup.Decode(file)
		if err != nil {
			return
		}
		if backup.Validate(b, fuzzNow) != nil {
			// Prepare refuses what validation refuses, without a panic.
			if _, _, err := recovery.Prepare(b.GetState(), opts(b)); err == nil && fsm.CheckState(b.GetState()) != nil {
				t.Fatalf("Prepare accepted a state that breaks the rules")
			}
			return
		}
		st, _, err := recovery.Prepare(b.GetState(), opts(b))
		if err != nil {
			t.Fatalf("a valid backup does not prepare: %v", err)
		}
		for i, tag := range b.GetState().GetTags() {
			if st.GetTags()[i].GetMaxId() <= tag.GetMaxId() {
				t.Fatalf("tag %q went from %d to %d", tag.GetTag(), tag.GetMaxId(), st.GetTags()[i].GetMaxId())
			}
		}
		serve(t, st)
	})
}

func opts(b *seqsvrv1.Backup) recovery.Options {
	return recovery.Options{Over: time.Hour, MaxSegmentSize: b.GetMaxSegmentSize(), Start: fuzzNow,
		LeaseWait: time.Duration(max(b.GetWorkerLeaseTtlMs(), b.GetSeqLeaseTtlMs()))*time.Millisecond + 2*time.Second, ClusterID: "new"}
}

// serve loads st as a restored member does and uses it.
func serve(t *testing.T, st *seqsvrv1.FSMSnapshot) {
	data, err := proto.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	m := fsm.New(nil)
	if err := m.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatalf("the prepared state does not load: %v", err)
	}
	after := st.GetRestoreFenceMs() + 1
	var index uint64
	apply := func(c *seqsvrv1.Command) {
		index++
		c.NowMs = after
		cmd, err := proto.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		m.Apply(&raft.Log{Index: index, Term: 1, Data: cmd})
	}
	for _, tag := range st.GetTags() {
		apply(&seqsvrv1.Command{Cmd: &seqsvrv1.Command_ReserveSegment{ReserveSegment: &seqsvrv1.ReserveSegmentCommand{Tag: tag.GetTag()}}})
	}
	apply(&seqsvrv1.Command{Cmd: &seqsvrv1.Command_RegisterWorker{RegisterWorker: &seqsvrv1.RegisterWorkerCommand{NodeId: "fuzz", NowMs: after, InstanceId: "i", LeaseTtlMs: 1000}}})
	apply(&seqsvrv1.Command{Cmd: &seqsvrv1.Command_SeqHeartbeat{SeqHeartbeat: &seqsvrv1.SeqHeartbeatCommand{NodeId: "fuzz", InstanceId: "i", LeaseTtlMs: 1000}}})
	for _, sp := range st.GetSpaces() {
		m.Space(sp.GetSpace())
		m.Routing(sp.GetSpace())
	}
	m.ListTags(1000, "")
	m.ListSpaces(1000, "")
}
