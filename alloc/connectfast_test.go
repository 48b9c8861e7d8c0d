package alloc

import (
	"testing"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

func TestAppendIDsMatchesProtoMarshal(t *testing.T) {
	for _, ids := range [][]int64{{1}, {0}, {1, 2, 3}, {1 << 40, 1<<40 + 1}, {127, 128, 16383, 16384}, {5, 3, 1 << 20}, {-1, 1}, {1<<63 - 1}, {300, 200, 300},
		{1 << 14, 1<<14 + 1}, {1 << 21, 1<<21 + 7}, {1 << 28, 1<<28 + 9}, {1 << 35, 1<<35 + 2}, {1 << 56, 1<<56 + 1}, {2, 3, 4}} {
		want, err := proto.Marshal(&seqsvrv1.NextIDsResponse{Ids: ids})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendIDs(nil, ids); string(got) != string(want) {
			t.Fatalf("%v: got %x, want %x", ids, got, want)
		}
	}
}
