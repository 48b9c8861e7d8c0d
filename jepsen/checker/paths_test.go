package checker

import (
	"testing"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// A serving path whose every call failed fails Progress, even when every
// kind succeeded on another path.
func TestProgressPerPath(t *testing.T) {
	all := []*history.Op{res(1, 0, 0, 1, 1, 2), get(2, 0, 2, 3, 2),
		ids(3, "a1", 1, history.NextIDs, 0, 1, 1), ids(4, "a1", 1, history.Snowflake, 0, 1, 5)}
	for _, op := range all {
		op.Path = history.PathH2
	}
	leaf := ids(5, "a1", 1, history.NextIDs, 2, 3, 2)
	leaf.Path = history.PathLeafH1
	if r := Progress(append(append([]*history.Op{}, all...), leaf)); !r.OK {
		t.Fatalf("every path answered, rejected: %s", r.Detail)
	}
	leaf.OK = false
	if r := Progress(append(append([]*history.Op{}, all...), leaf)); r.OK {
		t.Fatalf("a Leaf path with no answer accepted: %s", r.Detail)
	}
}

func TestSnowflakeDecode(t *testing.T) {
	l := Layout{EpochMs: 1000, WorkerBits: 10, SequenceBits: 12}
	id := int64(5)<<22 | 7<<12 | 3
	good := &history.Op{ID: 1, Kind: history.Decode, OK: true, IDs: []int64{id}, Decoded: &history.Decoded{TimestampMs: 1005, Worker: 7, Sequence: 3}}
	if r := SnowflakeDecode([]*history.Op{good}, l); !r.OK || r.Checked != 1 {
		t.Fatalf("a right decode rejected: %+v", r)
	}
	bad := *good
	bad.Decoded = &history.Decoded{TimestampMs: 1005, Worker: 6, Sequence: 3}
	if r := SnowflakeDecode([]*history.Op{good, &bad}, l); r.OK {
		t.Fatal("a decode with the wrong worker accepted")
	}
}
