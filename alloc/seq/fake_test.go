package seq

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/clock"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// fakeStore is an in-memory store following the design's rules for
// SeqHeartbeat, rebalance and RaiseSections (one space at a time is
// enough for these tests), on a fake clock.
type fakeStore struct {
	mu      sync.Mutex
	clock   clock.Clock
	ttl     time.Duration
	members map[string]*fakeMember
	spaces  map[string]*fakeSpace

	beats     []*seqsvrv1.SeqHeartbeatRequest
	raises    int
	marks     int           // first-use writes (keep_max), per section
	markReqs  int           // RaiseSections requests of first uses (keep_max)
	beatErr   error         // answered by SeqHeartbeat when set
	raiseGate chan struct{} // when set, RaiseSections waits for a receive
	inFlight  int           // raises in the store right now
	maxFlight int           // the most at once
}

type fakeMember struct {
	instance, url string
	expires       time.Time
	leaving       bool
}

type fakeSpace struct {
	used                  map[uint64][]byte // section -> its used-set, a bit per key (as the store keeps it)
	keyCount, sectionSize uint64
	step                  int64
	owner, next           []string
	max                   []int64
	version               uint64
}

func newFakeStore(c clock.Clock) *fakeStore {
	return &fakeStore{clock: c, ttl: 5 * time.Second, members: map[string]*fakeMember{}, spaces: map[string]*fakeSpace{}}
}

func (f *fakeStore) createSpace(name string, keyCount, sectionSize uint64, step int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := (keyCount + sectionSize - 1) / sectionSize
	f.spaces[name] = &fakeSpace{keyCount: keyCount, sectionSize: sectionSize, step: step,
		owner: make([]string, n), next: make([]string, n), max: make([]int64, n), version: 1}
	f.rebalance()
}

func (f *fakeStore) live(m *fakeMember) bool { return m.expires.After(f.clock.Now()) && !m.leaving }

func (f *fakeStore) rebalance() {
	var live []string
	for id, m := range f.members {
		if f.live(m) {
			live = append(live, id)
		}
	}
	slices.Sort(live)
	for _, sp := range f.spaces {
		changed := false
		for s := range sp.owner {
			target := ""
			if len(live) > 0 {
				target = live[s*len(live)/len(sp.owner)]
			}
			owner, next := sp.owner[s], sp.next[s]
			m := f.members[owner]
			switch {
			case owner == target:
				next = ""
			case owner == "" || m == nil || !f.live(m):
				owner, next = target, ""
			default:
				next = target
			}
			if owner != sp.owner[s] || next != sp.next[s] {
				sp.owner[s], sp.next[s], changed = owner, next, true
			}
		}
		if changed {
			sp.version++
		}
	}
}

func (f *fakeStore) table(name string, sp *fakeSpace) *seqsvrv1.RoutingTable {
	t := &seqsvrv1.RoutingTable{Space: name, KeyCount: sp.keyCount, SectionSize: sp.sectionSize, RoutingVersion: sp.version}
	for s := range sp.owner {
		if n := len(t.Sections); n > 0 && t.Sections[n-1].Owner == sp.owner[s] && t.Sections[n-1].NextOwner == sp.next[s] {
			t.Sections[n-1].LastSection = uint64(s)
			continue
		}
		r := &seqsvrv1.SectionRange{FirstSection: uint64(s), LastSection: uint64(s), Owner: sp.owner[s], NextOwner: sp.next[s]}
		if m := f.members[r.Owner]; m != nil {
			r.OwnerUrl, r.LeaseExpiresMs = m.url, m.expires.UnixMilli()
		}
		t.Sections = append(t.Sections, r)
	}
	return t
}

func (f *fakeStore) SeqHeartbeat(_ context.Context, req *seqsvrv1.SeqHeartbeatRequest) (*seqsvrv1.SeqHeartbeatResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beats = append(f.beats, req)
	if f.beatErr != nil {
		return nil, f.beatErr
	}
	now := f.clock.Now()
	if m := f.members[req.NodeId]; m != nil && m.instance != req.InstanceId && f.live(m) {
		return nil, fmt.Errorf("%w: node %s is held by live instance %s", errs.FailedPrecondition, req.NodeId, m.instance)
	}
	for _, span := range req.Released {
		if sp := f.spaces[span.Space]; sp != nil {
			for s := span.FirstSection; s <= span.LastSection && s < uint64(len(sp.owner)); s++ {
				if sp.owner[s] == req.NodeId {
					sp.owner[s], sp.next[s] = "", ""
				}
			}
		}
	}
	if req.Leaving {
		f.members[req.NodeId] = &fakeMember{instance: req.InstanceId, url: req.Url, expires: now, leaving: true}
		for _, sp := range f.spaces {
			for s := range sp.owner {
				if sp.owner[s] == req.NodeId {
					sp.owner[s], sp.next[s] = "", ""
				}
			}
		}
	} else {
		f.members[req.NodeId] = &fakeMember{instance: req.InstanceId, url: req.Url, expires: now.Add(f.ttl)}
	}
	f.rebalance()
	res := &seqsvrv1.SeqHeartbeatResponse{LeaseTtlMs: f.ttl.Milliseconds(), LeaseExpiresMs: now.Add(f.ttl).UnixMilli(), LeaderNowMs: now.UnixMilli()}
	for name, sp := range f.spaces {
		res.Tables = append(res.Tables, f.table(name, sp))
	}
	return res, nil
}

func (f *fakeStore) RaiseSections(ctx context.Context, req *seqsvrv1.RaiseSectionsRequest) (*seqsvrv1.RaiseSectionsResponse, error) {
	f.mu.Lock()
	f.inFlight++
	f.maxFlight = max(f.maxFlight, f.inFlight)
	gate := f.raiseGate
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %v", errs.Unavailable, ctx.Err())
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	sp := f.spaces[req.Space]
	if sp == nil {
		return nil, fmt.Errorf("%w: space %q", errs.NotFound, req.Space)
	}
	m := f.members[req.NodeId]
	res := &seqsvrv1.RaiseSectionsResponse{RoutingVersion: sp.version}
	if len(req.Sections) > 0 && req.Sections[0].KeepMax {
		f.markReqs++
	}
	for _, r := range req.Sections {
		if m == nil || m.instance != req.InstanceId || !f.live(m) || sp.owner[r.Section] != req.NodeId {
			return nil, fmt.Errorf("%w: not the owner of section %d", errs.FailedPrecondition, r.Section)
		}
		prev := sp.max[r.Section]
		if sp.used == nil {
			sp.used = map[uint64][]byte{}
		}
		for _, k := range r.FirstUse {
			sp.used[r.Section] = usedAdd(sp.used[r.Section], k)
		}
		if r.KeepMax {
			f.marks++
			res.Sections = append(res.Sections, &seqsvrv1.SectionMax{Section: r.Section, PrevMax: prev, MaxSeq: prev})
			continue
		}
		from := max(prev, r.KnownMax)
		if from > math.MaxInt64-sp.step {
			return nil, fmt.Errorf("%w: section %d would pass 2^63-1", errs.ResourceExhausted, r.Section)
		}
		next := prev + sp.step
		if r.KnownMax != -1 {
			next = max(prev, r.KnownMax+sp.step)
		}
		m := &seqsvrv1.SectionMax{Section: r.Section, PrevMax: prev, MaxSeq: next}
		if r.KnownMax == -1 {
			m.Used = slices.Clone(sp.used[r.Section])
		}
		res.Sections = append(res.Sections, m)
	}
	for _, r := range res.Sections {
		sp.max[r.Section] = r.MaxSeq
	}
	if len(req.Sections) > 0 && !req.Sections[0].KeepMax {
		f.raises++
	}
	return res, nil
}

// maxSeq is a section's committed max_seq.
func (f *fakeStore) maxSeq(space string, section uint64) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.spaces[space].max[section]
}

func (f *fakeStore) setMax(space string, section uint64, v int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spaces[space].max[section] = v
}

func (f *fakeStore) lastBeat() *seqsvrv1.SeqHeartbeatRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.beats[len(f.beats)-1]
}

func (f *fakeStore) owner(space string, section uint64) (owner, next string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.spaces[space].owner[section], f.spaces[space].next[section]
}

func usedAdd(b []byte, k uint32) []byte {
	for int(k/8) >= len(b) {
		b = append(b, 0)
	}
	b[k/8] |= 1 << (k % 8)
	return b
}
