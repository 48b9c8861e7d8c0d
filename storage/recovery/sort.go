package recovery

import (
	"cmp"
	"slices"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// sortMaxes keeps a space's sections in order, as snapshots write them.
func sortMaxes(ms []*seqsvrv1.SectionMaxState) {
	slices.SortFunc(ms, func(a, b *seqsvrv1.SectionMaxState) int { return cmp.Compare(a.GetSection(), b.GetSection()) })
}
