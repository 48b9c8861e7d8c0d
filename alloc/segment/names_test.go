package segment

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// tagSeries counts the per-tag series reg exports.
func tagSeries(t *testing.T, reg *prometheus.Registry) int {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "tag" {
					n++
				}
			}
		}
	}
	return n
}

// Names callers make up never become labels, whether the store denies
// them or cannot be reached; and while it cannot be reached, the names
// kept waiting for its answer are bounded.
func TestUnknownTagsMakeNoSeriesAndStayBounded(t *testing.T) {
	// Over ten thousand calls: under -race on a loaded 2-core machine they
	// take longer than testCtx's bound, which is for single calls.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := newFakeStore()
	f.create("t", 0, 10)
	reg := prometheus.NewRegistry()
	// EmptyWait bounds a call while the load is in flight, not a failed one:
	// long enough that a slow fake answer under -race is still an answer.
	a := newTest(t, f, Config{Registerer: reg, EmptyWait: 500 * time.Millisecond, LoadBackoff: time.Hour, LoadBackoffMax: time.Hour})
	if _, err := nextID(ctx, a, "t"); err != nil {
		t.Fatal(err)
	}
	base := tagSeries(t, reg)
	if base != 3 {
		t.Fatalf("%d series for tag t, want 3 (served, remaining, high)", base)
	}
	for i := range 200 {
		if _, err := nextID(ctx, a, fmt.Sprintf("nope-%d", i)); !errors.Is(err, errs.NotFound) {
			t.Fatalf("unknown tag: %v, want not_found", err)
		}
	}
	if n := tagSeries(t, reg); n != base {
		t.Fatalf("%d tag series after 200 unknown tags, want %d", n, base)
	}

	f.down.Store(true)
	for i := range maxUnconfirmed + 500 {
		if _, err := nextID(ctx, a, fmt.Sprintf("ghost-%d", i)); !errors.Is(err, errs.Unavailable) {
			t.Fatalf("tag while the store is down: %v, want unavailable", err)
		}
	}
	if n := tagSeries(t, reg); n != base {
		t.Fatalf("%d tag series with %d names waiting for the store, want %d", n, maxUnconfirmed, base)
	}
	if n := len(*a.tags.Load()); n > maxUnconfirmed+1 {
		t.Fatalf("%d tags in memory, want at most %d waiting and t", n, maxUnconfirmed)
	}
	if _, err := nextID(ctx, a, "t"); err != nil {
		t.Fatalf("a confirmed tag with buffered IDs: %v", err)
	}
}
