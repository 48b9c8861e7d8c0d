package seq

import (
	"context"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
)

func pendingMarks(n *Node, space string) int {
	m := n.markerOf(space)
	m.mu.Lock()
	defer m.mu.Unlock()
	k := 0
	for _, offs := range m.pending {
		k += len(offs)
	}
	return k
}

// TestFirstUsesShareOneWriteAcrossSections: first uses of keys of two
// sections, queued while a first-use write of the space is in flight, go
// into one next write listing both sections (one write in flight per
// space, the next round taking everything queued), and none is answered
// before its write committed.
func TestFirstUsesShareOneWriteAcrossSections(t *testing.T) {
	st, _, n := oneNode(t)
	next(t, n, "s", 0, 10) // load both sections (records keys 0 and 10)
	gate := make(chan struct{})
	st.mu.Lock()
	st.raiseGate = gate
	reqs, marks := st.markReqs, st.marks
	st.mu.Unlock()
	done := make(chan int64, 8)
	go func() { done <- next(t, n, "s", 1)[0] }()
	poll.Until(t, 5*time.Second, "the first write in flight", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.inFlight == 1
	})
	for _, k := range []uint64{2, 3, 4, 11, 12, 13, 14} {
		go func() { done <- next(t, n, "s", k)[0] }()
	}
	poll.Until(t, 5*time.Second, "7 first uses queued", func() bool { return pendingMarks(n, "s") == 7 })
	select {
	case v := <-done:
		t.Fatalf("a first use answered %d before its write committed", v)
	default:
	}
	close(gate)
	for range 8 {
		if v := <-done; v != 1 {
			t.Fatalf("a first use answered %d, want 1", v)
		}
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if r, m := st.markReqs-reqs, st.marks-marks; r != 2 || m != 3 {
		t.Fatalf("%d first-use writes of %d section items, want 2 writes of 3 (key 1; then both sections in one)", r, m)
	}
	for _, k := range []uint64{1, 2, 3, 4, 11, 12, 13, 14} {
		if u := st.spaces["s"].used[k/10]; u[(k%10)/8]&(1<<(k%10%8)) == 0 {
			t.Fatalf("key %d not in the store's used-set", k)
		}
	}
}

// TestFirstUseWriteOfSeveralSectionsRefused: when the store refuses a
// write listing several sections (one moved away), each section is
// written on its own: the moved one's callers get unavailable and the
// section is dropped, the other's keys are recorded and served.
func TestFirstUseWriteOfSeveralSectionsRefused(t *testing.T) {
	st, _, n := oneNode(t)
	next(t, n, "s", 0, 10)
	gate := make(chan struct{})
	st.mu.Lock()
	st.raiseGate = gate
	st.mu.Unlock()
	type answer struct {
		key uint64
		err error
	}
	done := make(chan answer, 3)
	call := func(k uint64) {
		_, _, err := n.Next(context.Background(), "s", []uint64{k}, false)
		done <- answer{k, err}
	}
	go call(1)
	poll.Until(t, 5*time.Second, "the first write in flight", func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.inFlight == 1
	})
	go call(2)
	go call(11)
	poll.Until(t, 5*time.Second, "2 first uses queued", func() bool { return pendingMarks(n, "s") == 2 })
	st.mu.Lock()
	st.spaces["s"].owner[1] = "b" // section 1 moved: the write of both is refused
	st.raiseGate = nil
	st.mu.Unlock()
	close(gate)
	for range 3 {
		a := <-done
		switch {
		case a.key == 11 && a.err == nil:
			t.Fatal("key 11 of a moved section answered")
		case a.key != 11 && a.err != nil:
			t.Fatalf("key %d: %v", a.key, a.err)
		}
	}
	if got := next(t, n, "s", 2); got[0] != 2 {
		t.Fatalf("key 2's next value %d, want 2", got[0])
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	if _, ok := n.sections[secKey{space: "s", section: 1}]; ok {
		t.Fatal("section 1 still in memory after the store refused it")
	}
}
