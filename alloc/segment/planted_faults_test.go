//go:build faults

package segment

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// carriedThenRecovered drains a tag's buffers while the store is down,
// leaving 18..20 carried by a request of 5 that failed, brings the store
// back and asks for 5 again.
func carriedThenRecovered(t *testing.T) []int64 {
	t.Helper()
	ctx, f, a := setup(t, "t", 0, 10, Config{MaxStep: 1, LoadBackoff: time.Millisecond, LoadBackoffMax: time.Millisecond})
	mustNext(t, ctx, a, "t")
	poll.Until(t, 10*time.Second, "next segment", nextReady(a, "t"))
	f.down.Store(true)
	for want := int64(2); want <= 17; want++ {
		if id := mustNext(t, ctx, a, "t"); id != want {
			t.Fatalf("id %d, want %d", id, want)
		}
	}
	if _, err := a.NextIDs(ctx, "t", 5); !errors.Is(err, errs.Unavailable) {
		t.Fatalf("5 IDs with 3 buffered and the store down: %v, want unavailable", err)
	}
	f.down.Store(false)
	var ids []int64
	poll.Until(t, 10*time.Second, "recovery", func() bool {
		var err error
		ids, err = a.NextIDs(ctx, "t", 5)
		return err == nil
	})
	return ids
}

// switch-drops-carry burns the carried IDs: the first request after the
// store is back gets IDs above them, with 18..20 never handed out.
func TestSwitchDropsCarryBug(t *testing.T) {
	if got := carriedThenRecovered(t); !slices.Equal(got, []int64{18, 19, 20, 21, 22}) {
		t.Fatalf("without the bug: %v, want the carried 18..20 first", got)
	}
	old := plantedDropsCarry
	plantedDropsCarry = true // what SEQSVR_FAULTS_BUGS=switch-drops-carry sets
	t.Cleanup(func() { plantedDropsCarry = old })
	if got := carriedThenRecovered(t); got[0] != 21 {
		t.Fatalf("with the bug: %v, want the carried IDs dropped (21 first)", got)
	}
}
