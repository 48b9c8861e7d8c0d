package fsm

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// fsmSnapshot is a deep copy of the state taken under the FSM lock.
type fsmSnapshot struct{ snap *seqsvrv1.FSMSnapshot }

// Persist writes the snapshot as one FSMSnapshot message; on any error it
// cancels the sink so raft never keeps a partial snapshot.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	b, err := proto.Marshal(s.snap)
	if err == nil {
		_, err = sink.Write(b)
	}
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("storage: persist snapshot: %w", err)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}

// toProto copies the state. Maps are written in key order so equal states
// give equal bytes; the request record keeps its FIFO order.
func (st *fsmState) toProto() *seqsvrv1.FSMSnapshot {
	snap := &seqsvrv1.FSMSnapshot{Layout: proto.Clone(st.layout).(*seqsvrv1.SnowflakeLayout), NextWorkerId: st.nextWorkerID,
		ClusterId: st.clusterID, LastIndex: st.lastIndex, LastTerm: st.lastTerm, LastNowMs: st.lastNowMs,
		RestoreFenceMs: st.restoreFenceMs, FormatVersion: FormatVersion, Generation: st.generation}
	for _, k := range sortedKeys(st.tags) {
		t := cloneTag(st.tags[k])
		t.Rate = cloneRate(st.tags[k].GetRate())
		snap.Tags = append(snap.Tags, t)
	}
	for _, k := range sortedKeys(st.tombstones) {
		t := &seqsvrv1.TagState{Tag: k, MaxId: st.tombstones[k]}
		if peak := st.tombRates[k]; peak > 0 {
			t.Rate = &seqsvrv1.RateState{PeakPerSec: peak}
		}
		snap.Tombstones = append(snap.Tombstones, t)
	}
	// Records and members (both kinds) are never changed after they are stored (eviction
	// and SetMember replace map entries), so the snapshot may share them;
	// copying up to RequestRecordLimit records here would hold up Apply.
	for _, id := range st.order[st.head:] {
		snap.Requests = append(snap.Requests, st.requests[id])
	}
	for _, k := range sortedKeys(st.workers) {
		snap.Workers = append(snap.Workers, proto.Clone(st.workers[k]).(*seqsvrv1.WorkerState))
	}
	for _, k := range sortedKeys(st.members) {
		snap.Members = append(snap.Members, st.members[k])
	}
	for _, k := range sortedKeys(st.spaces) {
		snap.Spaces = append(snap.Spaces, st.spaces[k].state())
	}
	for _, k := range sortedKeys(st.seqMembers) {
		snap.SeqMembers = append(snap.SeqMembers, st.seqMembers[k])
	}
	snap.ClusterVersion = st.clusterVersion
	return snap
}

func stateFromProto(snap *seqsvrv1.FSMSnapshot, defaultLayout *seqsvrv1.SnowflakeLayout) *fsmState {
	layout := snap.GetLayout()
	if layout == nil {
		layout = defaultLayout
	}
	st := newState(layout)
	st.nextWorkerID = snap.GetNextWorkerId()
	st.clusterVersion = snap.GetClusterVersion()
	st.clusterID, st.lastIndex, st.lastTerm, st.lastNowMs = snap.GetClusterId(), snap.GetLastIndex(), snap.GetLastTerm(), snap.GetLastNowMs()
	st.restoreFenceMs, st.generation = snap.GetRestoreFenceMs(), snap.GetGeneration()
	for _, t := range snap.GetTags() {
		st.tags[t.GetTag()] = t
	}
	for _, t := range snap.GetTombstones() {
		st.tombstones[t.GetTag()] = t.GetMaxId()
		if peak := t.GetRate().GetPeakPerSec(); peak > 0 {
			st.tombRates[t.GetTag()] = peak
		}
	}
	for _, r := range snap.GetRequests() {
		if _, dup := st.requests[r.GetRequestId()]; !dup {
			st.order = append(st.order, r.GetRequestId())
		}
		st.requests[r.GetRequestId()] = r
	}
	for _, w := range snap.GetWorkers() {
		st.workers[w.GetNodeId()] = w
	}
	for _, m := range snap.GetMembers() {
		st.members[m.GetId()] = m
	}
	for _, sp := range snap.GetSpaces() {
		st.spaces[sp.GetSpace()] = spaceFromState(sp)
	}
	for _, m := range snap.GetSeqMembers() {
		st.seqMembers[m.GetNodeId()] = m
	}
	return st
}

// sortedKeys lists m's keys in order, so whatever is built from a map does
// not depend on Go's map order.
func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// SnapshotOf is a raft snapshot that persists st as it is (after a restore
// or recovery built it), stamped with this binary's format version.
func SnapshotOf(st *seqsvrv1.FSMSnapshot) raft.FSMSnapshot {
	st.FormatVersion = FormatVersion
	return &fsmSnapshot{snap: st}
}
