package rpcmetrics

import (
	"testing"

	"github.com/seqsvr/seqsvr/internal/h1"
)

// BenchmarkH1 is what H1 adds to a fast-path call the front answers: the
// "bare" handler is the reference measured in the same run, "counted" the
// same handler wrapped (two clock reads, a map lookup, a counter and a
// histogram observation). Compare the two ns/op, not either alone.
func BenchmarkH1(b *testing.B) {
	bare := h1.HandlerFunc(func(_ *h1.Request, resp *h1.Response) bool {
		resp.Body = resp.Buf[:0]
		return true
	})
	req := &h1.Request{Path: []byte("/seqsvr.v1.AllocService/NextIDs")}
	for _, c := range []struct {
		name string
		h    h1.Handler
	}{{"bare", bare}, {"counted", New().H1(bare)}} {
		b.Run(c.name, func(b *testing.B) {
			var resp h1.Response
			b.ReportAllocs()
			for b.Loop() {
				c.h.ServeH1(req, &resp)
			}
		})
	}
}
