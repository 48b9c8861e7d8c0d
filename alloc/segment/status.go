package segment

import (
	"sort"

	"google.golang.org/protobuf/types/known/timestamppb"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// Status describes every loaded tag, sorted by name: what Leaf's /cache
// page shows.
func (a *Allocator) Status() []*seqsvrv1.TagStatus {
	tags := a.sortedTags()
	out := make([]*seqsvrv1.TagStatus, 0, len(tags))
	for _, t := range tags {
		out = append(out, t.status())
	}
	return out
}

func (a *Allocator) sortedTags() []*tagState {
	m := *a.tags.Load()
	tags := make([]*tagState, 0, len(m))
	for _, t := range m {
		tags = append(tags, t)
	}
	sort.Slice(tags, func(i, j int) bool { return tags[i].name < tags[j].name })
	return tags
}

func (t *tagState) status() *seqsvrv1.TagStatus {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &seqsvrv1.TagStatus{
		Tag:                t.name,
		Step:               t.step,
		BaseStep:           t.baseStep,
		NextReady:          t.next != nil,
		Loading:            t.loading,
		LastLoadDurationMs: t.lastLoadDur.Milliseconds(),
		IdsServed:          t.servedLocked(),
	}
	if b := t.cur.Load(); b != emptyBuffer {
		st.Current = bufferStatus(b)
		st.Position = b.first + b.used() // last+1 once exhausted
	}
	if t.next != nil {
		st.Next = bufferStatus(t.next)
	}
	if t.lastLoadErr != nil {
		st.LastLoadError = t.lastLoadErr.Error()
	}
	if !t.lastLoadTime.IsZero() {
		st.LastLoadTime = timestamppb.New(t.lastLoadTime)
	}
	return st
}

func bufferStatus(b *buffer) *seqsvrv1.SegmentStatus {
	return &seqsvrv1.SegmentStatus{First: b.first, Last: b.last, Remaining: b.remaining()}
}

// remainingLocked counts the IDs buffered for a tag: carry, current, next.
func (t *tagState) remainingLocked() int64 {
	r := countIDs(t.carry) + t.cur.Load().remaining()
	if t.next != nil {
		r += t.next.remaining()
	}
	return r
}

// servedLocked counts the IDs taken from this tag's segments so far.
func (t *tagState) servedLocked() int64 {
	s := t.servedDone - countIDs(t.carry)
	if b := t.cur.Load(); b != emptyBuffer {
		s += b.used()
	}
	return s
}
