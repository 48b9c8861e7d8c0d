// Package backuptest makes backup files for tests: a valid one built by
// the real state machine, and the evil ones, each valid in its frame and
// checksum but breaking one rule of the store, that a restore and
// `seqctl backup inspect` must refuse naming the problem.
package backuptest

import (
	"math"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/storage/backup"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// Valid is the backup of a small cluster taken a minute before now,
// built by applying commands to the real state machine: tags order
// (reserved once) and gone (deleted), a space chat with a raised
// section, a snowflake worker and a per-key member.
func Valid(now time.Time) *seqsvrv1.Backup {
	at := now.Add(-time.Minute).UnixMilli()
	m := fsm.New(nil)
	var index uint64
	apply := func(c *seqsvrv1.Command) {
		index++
		c.NowMs = at
		data, err := proto.Marshal(c)
		if err != nil {
			panic(err)
		}
		if res := m.Apply(&raft.Log{Index: index, Term: 1, Data: data}).(fsm.Result); res.Err != nil {
			panic(res.Err)
		}
	}
	apply(&seqsvrv1.Command{Cmd: &seqsvrv1.Command_Noop{Noop: &seqsvrv1.NoopCommand{ClusterId: "lost-cluster"}}})
	apply(&seqsvrv1.Command{Cmd: &seqsvrv1.Command_CreateTag{CreateTag: &seqsvrv1.CreateTagCommand{Tag: "order", Step: 1000}}})
	apply(&seqsvrv1.Command{Cmd: &seqsvrv1.Command_ReserveSegment{ReserveSegment: &seqsvrv1.ReserveSegmentCommand{Tag: "order"}}})
	apply(&seqsvrv1.Command{Cmd: &seqsvrv1.Command_CreateTag{CreateTag: &seqsvrv1.CreateTagCommand{Tag: "gone"}}})
	apply(&seqsvrv1.Command{Cmd: &seqsvrv1.Command_DeleteTag{DeleteTag: &seqsvrv1.DeleteTagCommand{Tag: "gone"}}})
	apply(&seqsvrv1.Command{Cmd: &seqsvrv1.Command_CreateSpace{CreateSpace: &seqsvrv1.CreateSpaceCommand{Space: "chat", KeyCount: 1000, SectionSize: 100, Step: 10}}})
	apply(&seqsvrv1.Command{Cmd: &seqsvrv1.Command_SeqHeartbeat{SeqHeartbeat: &seqsvrv1.SeqHeartbeatCommand{NodeId: "a1", InstanceId: "i1", LeaseTtlMs: 5000}}})
	apply(&seqsvrv1.Command{Cmd: &seqsvrv1.Command_RaiseSections{RaiseSections: &seqsvrv1.RaiseSectionsCommand{
		NodeId: "a1", InstanceId: "i1", Space: "chat", Sections: []*seqsvrv1.SectionRaise{{Section: 0, KnownMax: -1, FirstUse: []uint32{7}}}}}})
	apply(&seqsvrv1.Command{Cmd: &seqsvrv1.Command_RegisterWorker{RegisterWorker: &seqsvrv1.RegisterWorkerCommand{NodeId: "a1", NowMs: at, InstanceId: "i1", LeaseTtlMs: 10_000}}})
	return &seqsvrv1.Backup{ClusterId: "lost-cluster", RaftIndex: index, RaftTerm: 1, LeaderTimeMs: at, LeaderId: "s1", StoreVersion: "test",
		MaxSegmentSize: fsm.DefaultMaxSegmentSize, WorkerLeaseTtlMs: 10_000, SeqLeaseTtlMs: 5000, State: m.State()}
}

// Evil is one evil backup: its name, the file, and a piece of the text a
// refusal must hold to name the problem.
type Evil struct {
	Name string
	File []byte
	Want string
}

// Evils are the evil files, duplicate tags first, each Valid(now) with
// one change.
func Evils(now time.Time) []Evil {
	type change struct {
		name, want string
		f          func(b *seqsvrv1.Backup)
	}
	tenYears := (10 * 365 * 24 * time.Hour).Milliseconds()
	changes := []change{
		{"duplicate tags", `tag "dup" is listed twice`, func(b *seqsvrv1.Backup) {
			b.State.Tags = append(b.State.Tags, &seqsvrv1.TagState{Tag: "dup", MaxId: 900_000_000_000, Step: 1000},
				&seqsvrv1.TagState{Tag: "dup", MaxId: 10, Step: 1000})
		}},
		{"negative max_id", `tag "order": max_id -5 is below 0`, func(b *seqsvrv1.Backup) { b.State.Tags[0].MaxId = -5 }},
		{"a space with 2^64-1 keys", `space "chat": 18446744073709551615 keys`, func(b *seqsvrv1.Backup) {
			b.State.Spaces[0].KeyCount = math.MaxUint64
		}},
		{"section_size 0", `space "chat": key_count 1000, section_size 0, step 10: none may be 0`, func(b *seqsvrv1.Backup) {
			b.State.Spaces[0].SectionSize = 0
		}},
		{"no state", "the backup holds no state", func(b *seqsvrv1.Backup) { b.State = nil }},
		{"empty state", "the backup's state is empty", func(b *seqsvrv1.Backup) { b.State = &seqsvrv1.FSMSnapshot{} }},
		{"tag named <script>", `tag: tag "<script>" has the character '<'`, func(b *seqsvrv1.Backup) {
			b.State.Tags = append(b.State.Tags, &seqsvrv1.TagState{Tag: "<script>", Step: 1000})
		}},
		{"tag named empty", `tag: tag must not be empty`, func(b *seqsvrv1.Backup) {
			b.State.Tags = append(b.State.Tags, &seqsvrv1.TagState{Tag: "", Step: 1000})
		}},
		{"negative step", `tag "order": step -100 is outside 1..`, func(b *seqsvrv1.Backup) { b.State.Tags[0].Step = -100 }},
		{"worker lease of ten years", "worker_lease_ttl_ms 315360000000", func(b *seqsvrv1.Backup) { b.WorkerLeaseTtlMs = tenYears }},
		{"worker lease ending in ten years", "a worker lease ends at", func(b *seqsvrv1.Backup) {
			b.State.Workers[0].LeaseExpiresMs = b.GetLeaderTimeMs() + tenYears
		}},
		{"backup time 0", "backup time is 0 ms", func(b *seqsvrv1.Backup) { b.LeaderTimeMs = 0 }},
		{"backup time in the future", "ahead of this clock", func(b *seqsvrv1.Backup) { b.LeaderTimeMs = now.Add(time.Hour).UnixMilli() }},
		{"backup time past year 9999", "ahead of this clock", func(b *seqsvrv1.Backup) { b.LeaderTimeMs = math.MaxInt64 }},
		{"negative max_seq", `space "chat": section 0: max_seq -1 is below 0`, func(b *seqsvrv1.Backup) { b.State.Spaces[0].Maxes[0].MaxSeq = -1 }},
		{"section past the space", `space "chat": section 99 is past its last section 9`, func(b *seqsvrv1.Backup) {
			b.State.Spaces[0].Maxes[0].Section = 99
		}},
		{"max_segment_size 0", "max_segment_size 0 is outside", func(b *seqsvrv1.Backup) { b.MaxSegmentSize = 0 }},
	}
	out := make([]Evil, 0, len(changes))
	for _, c := range changes {
		b := Valid(now)
		c.f(b)
		file, err := backup.Encode(b)
		if err != nil {
			panic(err)
		}
		out = append(out, Evil{Name: c.name, File: file, Want: c.want})
	}
	return out
}
