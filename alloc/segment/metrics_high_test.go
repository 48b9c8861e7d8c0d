package segment

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seqsvr/seqsvr/internal/poll"
)

// seqsvr_segment_high_id is what the ID-space alert
// (deploy/prometheus/alerts.yml) divides by 2^63-1: the last ID of the
// newest segment, absent until one was reserved.
func TestSegmentHighIDMetric(t *testing.T) {
	ctx := testCtx(t)
	f := newFakeStore()
	f.create("t", 1000, 10)
	reg := prometheus.NewRegistry()
	a := newTest(t, f, Config{MaxStep: 1, Registerer: reg, LoadBackoff: time.Hour, LoadBackoffMax: time.Hour})
	if _, err := a.NextIDs(ctx, "t", 25); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "loads to settle", func() bool { return !tagStatus(a, "t").GetLoading() })
	st := tagStatus(a, "t")
	want := st.GetCurrent().GetLast()
	if n := st.GetNext(); n != nil {
		want = n.GetLast()
	}
	if want <= 1025 {
		t.Fatalf("status: newest segment ends at %d, below the IDs served", want)
	}
	if v := metricValue(t, reg, "seqsvr_segment_high_id", map[string]string{"tag": "t"}); v != float64(want) {
		t.Fatalf("high id %v, want %d", v, want)
	}
}
