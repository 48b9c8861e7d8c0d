package snowflake

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the snowflake side's Prometheus metrics. They exist even
// without a Registerer so the code never checks for nil.
type metrics struct {
	ids          prometheus.Counter
	backWaits    prometheus.Counter
	backRefusals prometheus.Counter
	renewals     *prometheus.CounterVec
	registers    *prometheus.CounterVec
	clockOffset  prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer, s *Service) *metrics {
	m := &metrics{
		ids: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seqsvr_snowflake_ids_total", Help: "Service IDs handed out.",
		}),
		backWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seqsvr_snowflake_clock_backward_waits_total", Help: "Times the clock moved back within the tolerance and was waited out.",
		}),
		backRefusals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "seqsvr_snowflake_clock_backward_refusals_total", Help: "Requests refused because the clock was behind the last timestamp beyond the tolerance.",
		}),
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqsvr_snowflake_lease_renewals_total", Help: "Worker lease renewals by result (ok, error, lost).",
		}, []string{"result"}),
		registers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "seqsvr_snowflake_worker_registrations_total", Help: "Worker registrations by result (ok, error, clock_offset).",
		}, []string{"result"}),
		clockOffset: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "seqsvr_snowflake_clock_offset_ms", Help: "Local clock minus the store leader's clock, as last measured.",
		}),
	}
	if reg == nil {
		return m
	}
	cs := []prometheus.Collector{m.ids, m.backWaits, m.backRefusals, m.renewals, m.registers, m.clockOffset,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seqsvr_snowflake_fenced", Help: "1 while snowflake IDs are refused (no lease, lease lost, high-water mark not writable).",
		}, func() float64 {
			if s.Status().GetFenced() {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "seqsvr_snowflake_worker_id", Help: "The snowflake worker ID held, -1 when none.",
		}, func() float64 { return float64(s.Status().GetWorkerId()) }),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				s.log.Warn("snowflake metric not registered", "err", err)
			}
		}
	}
	return m
}
