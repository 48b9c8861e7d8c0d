package checker

import (
	"testing"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

// A starting allocsvr's 503 took no ID: it excuses no hole, while a call
// whose connection broke may have taken its count.
func TestNoBurnedIDsStarting(t *testing.T) {
	next := func(id int64, ids ...int64) *history.Op {
		return &history.Op{ID: id, Kind: history.NextIDs, Tag: SoloPrefix + "a1", Target: "a1", Life: 2, LifeReturn: 2, Pid: 102,
			OK: true, IDs: ids, Count: len(ids)}
	}
	failedCall := func(err string) *history.Op {
		return &history.Op{ID: 3, Kind: history.NextIDs, Tag: SoloPrefix + "a1", Target: "a1", Life: 2, LifeReturn: 2, Pid: 102,
			Count: 3, Code: "unavailable", Err: err}
	}
	holed := []*history.Op{next(1, 101, 102), next(2, 106)}
	seg := SegmentBounds{Min: 10, Max: 20}
	if r := NoBurnedIDs(append(holed, failedCall(plain503)), seg); r.OK {
		t.Fatalf("a starting 503 excused a hole: %+v", r)
	}
	if r := NoBurnedIDs(append(holed, failedCall("unavailable: read tcp: connection reset by peer")), seg); !r.OK {
		t.Fatalf("a broken connection did not excuse its count: %+v", r)
	}
}
