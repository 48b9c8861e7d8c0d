package alloc

import (
	"testing"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// BenchmarkAppendIDs is the fast path's encoder for count=1000 beside
// proto.Marshal of the same message (the reference).
func BenchmarkAppendIDs(b *testing.B) {
	ids := make([]int64, 1000)
	for i := range ids {
		ids[i] = 50_000_000 + int64(i)
	}
	b.Run("appendIDs", func(b *testing.B) {
		buf := make([]byte, 0, 8192)
		for b.Loop() {
			buf = appendIDs(buf[:0], ids)
		}
	})
	b.Run("proto.Marshal", func(b *testing.B) {
		buf := make([]byte, 0, 8192)
		msg := &seqsvrv1.NextIDsResponse{Ids: ids}
		for b.Loop() {
			buf, _ = proto.MarshalOptions{}.MarshalAppend(buf[:0], msg)
		}
	})
}
