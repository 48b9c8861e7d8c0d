package recovery

import (
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/storage/backup"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// bigState is the benchmark store: 10,000 tags, each reserved
// once, and a space with 1,000,000 used keys (10 sections of 100,000).
func bigState(b *testing.B) *seqsvrv1.FSMSnapshot {
	b.Helper()
	m := fsm.New(nil)
	var index uint64
	apply := func(c *seqsvrv1.Command) {
		index++
		data, err := proto.Marshal(c)
		if err != nil {
			b.Fatal(err)
		}
		if res := m.Apply(&raft.Log{Index: index, Term: 1, Data: data}).(fsm.Result); res.Err != nil {
			b.Fatal(res.Err)
		}
	}
	for i := range 10_000 {
		tag := fmt.Sprintf("tag-%05d", i)
		apply(&seqsvrv1.Command{NowMs: 1, Cmd: &seqsvrv1.Command_CreateTag{CreateTag: &seqsvrv1.CreateTagCommand{Tag: tag, Step: 1000}}})
		apply(&seqsvrv1.Command{NowMs: 2, Cmd: &seqsvrv1.Command_ReserveSegment{ReserveSegment: &seqsvrv1.ReserveSegmentCommand{Tag: tag}}})
	}
	apply(&seqsvrv1.Command{NowMs: 3, Cmd: &seqsvrv1.Command_CreateSpace{CreateSpace: &seqsvrv1.CreateSpaceCommand{Space: "chat", KeyCount: 1_000_000, SectionSize: 100_000}}})
	apply(&seqsvrv1.Command{NowMs: 3, Cmd: &seqsvrv1.Command_SeqHeartbeat{SeqHeartbeat: &seqsvrv1.SeqHeartbeatCommand{NodeId: "a", InstanceId: "i", LeaseTtlMs: 1 << 40}}})
	offsets := make([]uint32, 100_000)
	for i := range offsets {
		offsets[i] = uint32(i)
	}
	for sec := range uint64(10) {
		apply(&seqsvrv1.Command{NowMs: 4, Cmd: &seqsvrv1.Command_RaiseSections{RaiseSections: &seqsvrv1.RaiseSectionsCommand{
			NodeId: "a", InstanceId: "i", Space: "chat", Sections: []*seqsvrv1.SectionRaise{{Section: sec, KnownMax: -1, FirstUse: offsets}}}}})
	}
	return m.State()
}

// BenchmarkBackupFile is what the leader does for StoreService.Backup
// (copy the state, frame it) on the benchmark store.
func BenchmarkBackupFile(b *testing.B) {
	m := bigState(b)
	var size int
	b.ResetTimer()
	for b.Loop() {
		st := proto.Clone(m).(*seqsvrv1.FSMSnapshot)
		file, err := backup.Encode(&seqsvrv1.Backup{ClusterId: "c", State: st})
		if err != nil {
			b.Fatal(err)
		}
		size = len(file)
	}
	b.ReportMetric(float64(size), "file-bytes")
}

// BenchmarkRestorePrepare is what storesvr --restore does before it
// starts: check and decode the file, jump every counter.
func BenchmarkRestorePrepare(b *testing.B) {
	file, err := backup.Encode(&seqsvrv1.Backup{ClusterId: "c", State: bigState(b)})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		bk, err := backup.Decode(file)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := Prepare(bk.GetState(), Options{Over: time.Hour, MaxSegmentSize: 1000, Start: time.Now(), ClusterID: "n"}); err != nil {
			b.Fatal(err)
		}
	}
}
