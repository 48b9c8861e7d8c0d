package backup

import (
	"encoding/json"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// Summary is what `seqctl backup inspect` shows of a backup.
type Summary struct {
	FormatVersion    int        `json:"format_version"`
	StateVersion     uint32     `json:"state_format_version"`
	SizeBytes        int        `json:"size_bytes"`
	ClusterID        string     `json:"cluster_id"`
	Generation       int64      `json:"generation"`
	LeaderID         string     `json:"leader_id"`
	StoreVersion     string     `json:"store_version"`
	Time             Stamp      `json:"time"`
	TimeMs           int64      `json:"time_ms"`
	RaftIndex        uint64     `json:"raft_index"`
	RaftTerm         uint64     `json:"raft_term"`
	MaxSegmentSize   int64      `json:"max_segment_size"`
	WorkerLeaseTTLMs int64      `json:"worker_lease_ttl_ms"`
	SeqLeaseTTLMs    int64      `json:"seq_lease_ttl_ms"`
	Tags             []TagLine  `json:"tags"`
	Tombstones       []TagLine  `json:"tombstones"`
	Spaces           []SpaceSum `json:"spaces"`
	Workers          int        `json:"workers"`
	SeqMembers       int        `json:"seq_members"`
	Members          int        `json:"members"`
}

// TagLine is one tag (or tombstone) of a backup.
type TagLine struct {
	Tag        string `json:"tag"`
	MaxID      int64  `json:"max_id"`
	Step       int64  `json:"step,omitempty"`
	PeakPerSec int64  `json:"peak_per_sec"`
}

// SpaceSum is one space of a backup.
type SpaceSum struct {
	Space          string `json:"space"`
	Sections       uint64 `json:"sections"`
	RaisedSections int    `json:"raised_sections"`
	MaxSeq         int64  `json:"max_seq"`
	PeakPerSec     int64  `json:"peak_per_sec"`
	UsedKeys       int    `json:"used_keys"`
}

// Summarize describes b; size is the file's length.
func Summarize(b *seqsvrv1.Backup, size int) Summary {
	st := b.GetState()
	s := Summary{
		FormatVersion: FormatVersion, StateVersion: st.GetFormatVersion(), SizeBytes: size,
		ClusterID: b.GetClusterId(), Generation: max(b.GetGeneration(), st.GetGeneration()), LeaderID: b.GetLeaderId(), StoreVersion: b.GetStoreVersion(),
		Time: Stamp(b.GetLeaderTimeMs()), TimeMs: b.GetLeaderTimeMs(), RaftIndex: b.GetRaftIndex(), RaftTerm: b.GetRaftTerm(),
		MaxSegmentSize: b.GetMaxSegmentSize(), WorkerLeaseTTLMs: b.GetWorkerLeaseTtlMs(), SeqLeaseTTLMs: b.GetSeqLeaseTtlMs(),
		Workers: len(st.GetWorkers()), SeqMembers: len(st.GetSeqMembers()), Members: len(st.GetMembers()),
		Tags: []TagLine{}, Tombstones: []TagLine{}, Spaces: []SpaceSum{},
	}
	for _, t := range st.GetTags() {
		s.Tags = append(s.Tags, TagLine{Tag: t.GetTag(), MaxID: t.GetMaxId(), Step: t.GetStep(), PeakPerSec: t.GetRate().GetPeakPerSec()})
	}
	for _, t := range st.GetTombstones() {
		s.Tombstones = append(s.Tombstones, TagLine{Tag: t.GetTag(), MaxID: t.GetMaxId(), PeakPerSec: t.GetRate().GetPeakPerSec()})
	}
	for _, sp := range st.GetSpaces() {
		sum := SpaceSum{Space: sp.GetSpace(), Sections: (sp.GetKeyCount() + sp.GetSectionSize() - 1) / max(sp.GetSectionSize(), 1), RaisedSections: len(sp.GetMaxes())}
		for _, m := range sp.GetMaxes() {
			sum.MaxSeq = max(sum.MaxSeq, m.GetMaxSeq())
			sum.PeakPerSec = max(sum.PeakPerSec, m.GetRate().GetPeakPerSec())
			for _, by := range m.GetUsed() {
				for ; by != 0; by &= by - 1 {
					sum.UsedKeys++
				}
			}
		}
		s.Spaces = append(s.Spaces, sum)
	}
	return s
}

// Stamp is a time in Unix milliseconds, shown as RFC 3339 where that
// format can show it (years 0..9999) and as the number otherwise, so a
// summary of a file with any time prints.
type Stamp int64

func (s Stamp) String() string { return stamp(int64(s)) }

// MarshalJSON is the String, quoted.
func (s Stamp) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }
