package fsm

import (
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// Reads of the applied state. Each runs under the read lock and answers
// copies the caller may keep. None is linearizable by itself: the store
// makes a read linearizable (leader, barrier, VerifyLeader) before it
// calls one.

// Tag is the tag's answer, nil when there is no such tag (a deleted
// tag's tombstone is never shown).
func (f *Machine) Tag(name string) *seqsvrv1.Tag {
	var out *seqsvrv1.Tag
	f.read(func(st *fsmState) {
		if t, ok := st.tags[name]; ok {
			out = APITag(t)
		}
	})
	return out
}

// ListTags is the page of at most size tags named after after, in name
// order, and the next page's token ("" at the end); see PageParams.
func (f *Machine) ListTags(size int, after string) (tags []*seqsvrv1.Tag, next string) {
	f.read(func(st *fsmState) { tags, next = listPage(st.tags, size, after, APITag) })
	return tags, next
}

// Space is the space's answer; false when there is no such space.
func (f *Machine) Space(name string) (out *seqsvrv1.Space, ok bool) {
	f.read(func(st *fsmState) {
		if sp, found := st.spaces[name]; found {
			out, ok = sp.api(), true
		}
	})
	return out, ok
}

// Routing is the space's routing table, owner URLs and leases from the
// member table; false when there is no such space.
func (f *Machine) Routing(name string) (out *seqsvrv1.RoutingTable, ok bool) {
	f.read(func(st *fsmState) {
		if sp, found := st.spaces[name]; found {
			out, ok = st.table(sp), true
		}
	})
	return out, ok
}

// ListSpaces is ListTags for spaces.
func (f *Machine) ListSpaces(size int, after string) (spaces []*seqsvrv1.Space, next string) {
	f.read(func(st *fsmState) { spaces, next = listPage(st.spaces, size, after, (*space).api) })
	return spaces, next
}

// listPage is one page of m's entries in name order, each converted by
// api, and the next page's token.
func listPage[V, Out any](m map[string]V, size int, after string, api func(V) Out) ([]Out, string) {
	names, next := page(m, size, after)
	var out []Out
	for _, name := range names {
		out = append(out, api(m[name]))
	}
	return out, next
}

// NextSegment is the segment a reservation of size (0: the tag's step)
// would take next on this state, changing nothing; false when the tag does
// not exist or the FSM would refuse the reservation. Only the planted
// reserve-before-commit bug answers from it.
func (f *Machine) NextSegment(tag string, size int64) (seg *seqsvrv1.Segment, ok bool) {
	f.read(func(st *fsmState) {
		t, found := st.tags[tag]
		if !found {
			return
		}
		if first, last, err := nextRange(t, size); err == nil {
			seg, ok = &seqsvrv1.Segment{Tag: t.GetTag(), First: first, Last: last, Step: t.GetStep()}, true
		}
	})
	return seg, ok
}

// State is a copy of the whole state as a snapshot message, without the
// planted snapshot bug (tests compare members with it).
func (f *Machine) State() (snap *seqsvrv1.FSMSnapshot) {
	f.read(func(st *fsmState) { snap = st.toProto() })
	return snap
}

// Member is a member's recorded addresses, nil when unknown.
func (f *Machine) Member(id string) *seqsvrv1.MemberInfo {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if m, ok := f.st.members[id]; ok {
		return proto.Clone(m).(*seqsvrv1.MemberInfo)
	}
	return nil
}

// APITag is a stored tag as StoreService answers it.
func APITag(t *seqsvrv1.TagState) *seqsvrv1.Tag {
	return &seqsvrv1.Tag{Tag: t.GetTag(), MaxId: t.GetMaxId(), Step: t.GetStep(), Description: t.GetDescription(),
		UpdateTime: timestamppb.New(time.UnixMilli(t.GetUpdateTimeMs()))}
}
