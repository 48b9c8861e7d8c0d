package leaf

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// memStore is a leaf_alloc row in memory.
type memStore struct {
	mu     sync.Mutex
	max    int64
	step   int64
	steps  []int64 // the raise of each call
	failAt int     // the call (1-based) that fails; 0 never
}

func (m *memStore) Raise(_ context.Context, tag string, step int64) (Alloc, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failAt > 0 && len(m.steps)+1 >= m.failAt {
		return Alloc{}, errors.New("db down")
	}
	if step == 0 {
		step = m.step
	}
	m.max += step
	m.steps = append(m.steps, step)
	return Alloc{Tag: tag, MaxID: m.max, Step: m.step}, nil
}

// Concurrent callers get every ID exactly once, in order of the segments,
// and the step doubles while segments last less than 15 minutes.
func TestNextUniqueAcrossSegments(t *testing.T) {
	st := &memStore{max: 1, step: 100}
	g := New(st)
	const workers, each = 8, 5000
	ids := make([][]int64, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				id, err := g.Next(context.Background(), "t")
				if err != nil {
					t.Error(err)
					return
				}
				ids[w] = append(ids[w], id)
			}
		}()
	}
	wg.Wait()
	seen := map[int64]bool{}
	for _, l := range ids {
		for i, id := range l {
			if seen[id] {
				t.Fatalf("id %d handed out twice", id)
			}
			seen[id] = true
			if i > 0 && id <= l[i-1] {
				t.Fatalf("one caller got %d after %d", id, l[i-1])
			}
		}
	}
	// 40,000 IDs from a step of 100 need far fewer loads once it doubles.
	if len(st.steps) > 12 {
		t.Fatalf("%d loads for %d IDs: steps %v", len(st.steps), workers*each, st.steps)
	}
	if st.steps[len(st.steps)-1] <= 100 {
		t.Fatalf("step never grew: %v", st.steps)
	}
}

// A segment that lasted more than 30 minutes halves the step, not below
// the row's own.
func TestStepHalvesWhenSlow(t *testing.T) {
	st := &memStore{max: 1, step: 10}
	g := New(st)
	now := time.Unix(0, 0)
	g.now = func() time.Time { return now }
	b := g.buffer("t")
	b.initOK = true // past the first load, as Next leaves it
	step := func(d time.Duration) {
		now = now.Add(d)
		if err := g.load(context.Background(), b, b.segs[0]); err != nil {
			t.Fatal(err)
		}
	}
	step(0)           // the first timed load: the row's step
	step(time.Minute) // fast: doubles
	step(time.Minute) // fast: doubles
	step(time.Hour)   // slow: halves
	step(time.Hour)   // slow: halves
	step(time.Hour)   // slow, at the row's step: stays
	want := []int64{10, 20, 40, 20, 10, 10}
	if len(st.steps) != len(want) {
		t.Fatalf("steps %v, want %v", st.steps, want)
	}
	for i := range want {
		if st.steps[i] != want[i] {
			t.Fatalf("steps %v, want %v", st.steps, want)
		}
	}
}

// With the database gone, callers get ErrNotReady once both segments are
// used, never an ID twice.
func TestNotReadyWhenStoreFails(t *testing.T) {
	st := &memStore{max: 1, step: 10, failAt: 2}
	g := New(st)
	seen := map[int64]bool{}
	var err error
	for range 100 {
		var id int64
		if id, err = g.Next(context.Background(), "t"); err != nil {
			break
		}
		if seen[id] {
			t.Fatalf("id %d twice", id)
		}
		seen[id] = true
	}
	if !errors.Is(err, ErrNotReady) || len(seen) != 10 {
		t.Fatalf("after %d IDs: %v", len(seen), err)
	}
}
