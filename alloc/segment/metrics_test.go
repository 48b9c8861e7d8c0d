package segment

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
)

func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			return valueOf(m)
		}
	}
	t.Fatalf("metric %s%v not found", name, labels)
	return 0
}

func valueOf(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return 0
}

func TestSegmentMetrics(t *testing.T) {
	ctx := testCtx(t)
	f := newFakeStore()
	f.create("t", 0, 10)
	reg := prometheus.NewRegistry()
	a := newTest(t, f, Config{MaxStep: 1, Registerer: reg, LoadBackoff: time.Hour, LoadBackoffMax: time.Hour})

	if _, err := a.NextIDs(ctx, "t", 25); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 10*time.Second, "loads to settle", func() bool { return !tagStatus(a, "t").GetLoading() })
	if v := metricValue(t, reg, "seqsvr_segment_ids_served_total", map[string]string{"tag": "t"}); v != 25 {
		t.Fatalf("ids served %v, want 25", v)
	}
	st := tagStatus(a, "t")
	want := float64(st.GetCurrent().GetRemaining() + st.GetNext().GetRemaining())
	if v := metricValue(t, reg, "seqsvr_segment_buffer_remaining", map[string]string{"tag": "t"}); v != want {
		t.Fatalf("remaining %v, want %v", v, want)
	}
	loads := metricValue(t, reg, "seqsvr_segment_loads_total", map[string]string{"result": "ok"})
	if loads != float64(f.reserves.Load()) || loads < 3 {
		t.Fatalf("ok loads %v, store saw %d", loads, f.reserves.Load())
	}
	if v := metricValue(t, reg, "seqsvr_segment_load_seconds", nil); v != loads {
		t.Fatalf("latency samples %v, want %v", v, loads)
	}

	f.down.Store(true)
	for {
		_, err := nextID(ctx, a, "t")
		if errors.Is(err, errs.Unavailable) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if v := metricValue(t, reg, "seqsvr_segment_unavailable_total", nil); v != 1 {
		t.Fatalf("unavailable answers %v, want 1", v)
	}
	if v := metricValue(t, reg, "seqsvr_segment_loads_total", map[string]string{"result": "error"}); v != 1 {
		t.Fatalf("failed loads %v, want 1", v)
	}
}
