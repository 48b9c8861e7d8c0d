package fsm

import (
	"fmt"
	"io"
	"sync"

	"github.com/hashicorp/raft"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// Result is what Apply returns to the proposer. Business errors (tag
// not found, lease held, ...) travel in Err: they are deterministic outcomes
// of a committed entry, identical on every member, and change nothing.
// The pointers are copies the caller may keep.
type Result struct {
	Tag    *seqsvrv1.TagState
	Seg    *seqsvrv1.RequestRecord
	Worker *WorkerAnswer
	// Per-key sequences: what CreateSpace, SeqHeartbeat and RaiseSections
	// answer, built under the lock.
	Space     *seqsvrv1.Space
	Heartbeat *seqsvrv1.SeqHeartbeatResponse
	Raise     *seqsvrv1.RaiseSectionsResponse
	Err       error
}

// WorkerAnswer is a worker's state plus what the Worker reply needs.
type WorkerAnswer struct {
	State       *seqsvrv1.WorkerState
	Layout      *seqsvrv1.SnowflakeLayout
	LeaderNowMs int64
	LeaseTTLMs  int64
}

// Machine is the replicated state machine. Apply is deterministic: it reads
// time only from Command.now_ms and configuration only from the command.
type Machine struct {
	mu sync.RWMutex
	st *fsmState
	// defaultLayout is used for a fresh state and for snapshots without one.
	defaultLayout *seqsvrv1.SnowflakeLayout
	// onFatal is told once of the entry this member cannot apply (OnFatal).
	onFatal func(error)
	// stopped is that entry's error: from then on Apply changes nothing,
	// and Snapshot and Restore refuse (stop.go).
	stopped error
}

// fsmState is the whole replicated state; Restore swaps in a fresh one.
type fsmState struct {
	tags         map[string]*seqsvrv1.TagState
	tombstones   map[string]int64 // deleted tag -> its max_id; never shown by GetTag/ListTags
	tombRates    map[string]int64 // deleted tag -> its peak rate per second (for a restore's jump)
	requests     map[string]*seqsvrv1.RequestRecord
	order        []string // request IDs oldest first; order[head:] is live
	head         int
	workers      map[string]*seqsvrv1.WorkerState // by node_id
	members      map[string]*seqsvrv1.MemberInfo
	layout       *seqsvrv1.SnowflakeLayout
	nextWorkerID int64
	spaces       map[string]*space
	seqMembers   map[string]*seqsvrv1.SeqMemberState // by node_id
	// clusterVersion is the feature level raised by NoopCommand; 0 (the
	// base release's state) reads as BaseLevel.
	clusterVersion uint32
	// clusterID is fixed once (NoopCommand.cluster_id or a restore).
	clusterID string
	// The last command applied: its Raft index and term, and the largest
	// now_ms seen (the time of the last applied entry, for --recover).
	lastIndex, lastTerm uint64
	lastNowMs           int64
	// restoreFenceMs: no worker ID or section is granted before it.
	restoreFenceMs int64
	// generation is set by a restore or recovery only (generation.go).
	generation int64
}

// New makes an empty state machine. A nil layout is the store's,
// spec.DefaultLayout(); the tests pass smaller ones to run out of worker IDs.
func New(layout *seqsvrv1.SnowflakeLayout, opts ...Option) *Machine {
	if layout == nil {
		layout = spec.DefaultLayout()
	}
	f := &Machine{st: newState(layout), defaultLayout: layout}
	for _, o := range opts {
		o(f)
	}
	return f
}

func newState(layout *seqsvrv1.SnowflakeLayout) *fsmState {
	return &fsmState{
		tags:       map[string]*seqsvrv1.TagState{},
		tombstones: map[string]int64{},
		tombRates:  map[string]int64{},
		requests:   map[string]*seqsvrv1.RequestRecord{},
		workers:    map[string]*seqsvrv1.WorkerState{},
		members:    map[string]*seqsvrv1.MemberInfo{},
		spaces:     map[string]*space{},
		seqMembers: map[string]*seqsvrv1.SeqMemberState{},
		layout:     proto.Clone(layout).(*seqsvrv1.SnowflakeLayout),
	}
}

// Apply implements raft.FSM. An entry that does not decode, or a command
// this binary does not know (a newer release's), can be neither applied
// nor skipped: skipping it would silently fork the replicas. The machine
// stops on it instead (stop.go): OnFatal is told, and nothing changes.
func (f *Machine) Apply(l *raft.Log) interface{} {
	var cmd seqsvrv1.Command
	if err := proto.Unmarshal(l.Data, &cmd); err != nil {
		return f.stop(fmt.Errorf("undecodable raft entry %d (term %d): %w", l.Index, l.Term, err))
	}
	return f.applyCommand(&cmd, l.Index, l.Term)
}

// applyCommand applies cmd as its registration says (commands.go).
func (f *Machine) applyCommand(cmd *seqsvrv1.Command, index, term uint64) Result {
	c, err := lookup(cmd)
	if err != nil {
		return f.stop(fmt.Errorf("raft entry %d (term %d, cluster version %d): %w", index, term, f.ClusterVersion(), err))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped != nil {
		return stoppedResult(f.stopped)
	}
	now := cmd.GetNowMs()
	f.st.lastIndex, f.st.lastTerm, f.st.lastNowMs = index, term, max(f.st.lastNowMs, now)
	return c.apply(f.st, now, cmd)
}

// Snapshot implements raft.FSM: it copies the state under the lock so
// Persist can run concurrently with Apply.
func (f *Machine) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if f.stopped != nil {
		return nil, stoppedErr(f.stopped)
	}
	snap := f.st.toProto()
	plantedSnapshotDropsMaxID(snap)
	return &fsmSnapshot{snap: snap}, nil
}

// Restore implements raft.FSM: it builds a fresh state from the snapshot and
// swaps it in, discarding everything held before.
func (f *Machine) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		return fmt.Errorf("storage: read snapshot: %w", err)
	}
	// A newer release's snapshot (one sent by a newer leader during a
	// rollback) is refused rather than misread.
	if err := CheckSnapshotFormat("snapshot", b); err != nil {
		return err
	}
	var snap seqsvrv1.FSMSnapshot
	if err := proto.Unmarshal(b, &snap); err != nil {
		return fmt.Errorf("storage: decode snapshot: %w", err)
	}
	st := stateFromProto(&snap, f.defaultLayout)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped != nil {
		return stoppedErr(f.stopped)
	}
	f.st = st
	return nil
}

// read runs fn with the state under the read lock.
func (f *Machine) read(fn func(st *fsmState)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(f.st)
}
