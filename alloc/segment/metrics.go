package segment

import (
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// metrics exports the segment allocator's metrics. Per-tag figures are
// computed at scrape time from the buffers, so the hot path pays nothing
// for them, and only for tags the store confirmed (a segment was
// reserved): a name a caller made up never becomes a label. A nil
// *metrics (no Registerer) records nothing.
type metrics struct {
	a           *Allocator
	served      *prometheus.Desc
	remaining   *prometheus.Desc
	high        *prometheus.Desc
	loads       *prometheus.CounterVec
	loadSeconds prometheus.Histogram
	unavail     prometheus.Counter
}

func newMetrics(a *Allocator, reg prometheus.Registerer, log *slog.Logger) *metrics {
	if reg == nil {
		return nil
	}
	m := &metrics{
		a: a,
		served: prometheus.NewDesc("seqsvr_segment_ids_served_total",
			"Segment IDs handed out, per tag.", []string{"tag"}, nil),
		remaining: prometheus.NewDesc("seqsvr_segment_buffer_remaining",
			"IDs buffered (current and next segment), per tag.", []string{"tag"}, nil),
		// For the ID-space alert: a tag ends at 2^63-1 (resource_exhausted).
		high: prometheus.NewDesc("seqsvr_segment_high_id",
			"Last ID of the newest segment reserved for the tag (its ID space ends at 2^63-1), per tag.", []string{"tag"}, nil),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqsvr_segment_loads_total",
			Help: "Segment reservations from the store, by result (ok, not_found, error).",
		}, []string{"result"}),
		loadSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "seqsvr_segment_load_seconds",
			Help:    "Latency of segment reservations, store-client retries included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		unavail: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seqsvr_segment_unavailable_total",
			Help: "Segment requests answered unavailable (buffers empty, store unreachable).",
		}),
	}
	for _, c := range []prometheus.Collector{m, m.loads, m.loadSeconds, m.unavail} {
		if err := reg.Register(c); err != nil {
			log.Warn("segment metrics not registered", "err", err)
		}
	}
	return m
}

func (m *metrics) load(err error, d time.Duration) {
	if m == nil {
		return
	}
	result := "ok"
	switch {
	case errors.Is(err, errs.NotFound):
		result = "not_found"
	case err != nil:
		result = "error"
	}
	m.loads.WithLabelValues(result).Inc()
	m.loadSeconds.Observe(d.Seconds())
}

func (m *metrics) unavailable() {
	if m != nil {
		m.unavail.Inc()
	}
}

// Describe implements prometheus.Collector for the per-tag figures.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.served
	ch <- m.remaining
	ch <- m.high
}

// Collect implements prometheus.Collector for the per-tag figures.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	for _, t := range m.a.sortedTags() {
		t.mu.Lock()
		served, rem, high, exists := t.servedLocked(), t.remainingLocked(), t.high, t.loaded && !t.removed
		t.mu.Unlock()
		if !exists {
			continue
		}
		ch <- prometheus.MustNewConstMetric(m.served, prometheus.CounterValue, float64(served), t.name)
		ch <- prometheus.MustNewConstMetric(m.remaining, prometheus.GaugeValue, float64(rem), t.name)
		ch <- prometheus.MustNewConstMetric(m.high, prometheus.GaugeValue, float64(high), t.name)
	}
}
