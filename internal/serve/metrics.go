package serve

import (
	"fmt"

	gometrics "github.com/hashicorp/go-metrics"
	gmprom "github.com/hashicorp/go-metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// NewRegistry returns a registry with the Go runtime and process
// collectors, for one process's /metrics.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// InstallRaftMetrics routes hashicorp/go-metrics (what hashicorp/raft emits
// to when built with -tags hashicorpmetrics) into reg, so raft_* series
// appear on /metrics. go-metrics is process-global: call it once per process.
func InstallRaftMetrics(reg prometheus.Registerer) error {
	sink, err := gmprom.NewPrometheusSinkFrom(gmprom.PrometheusOpts{
		Name:       "raft_go_metrics",
		Registerer: reg,
		// Series never expire: a follower's leader-only gauges would
		// otherwise vanish and reappear, which confuses alerting.
		Expiration: 0,
	})
	if err != nil {
		return fmt.Errorf("go-metrics prometheus sink: %w", err)
	}
	cfg := gometrics.DefaultConfig("")
	cfg.EnableHostname = false
	cfg.EnableHostnameLabel = false
	cfg.EnableRuntimeMetrics = false // the Go collector already exports these
	cfg.EnableServiceLabel = false
	if _, err := gometrics.NewGlobal(cfg, sink); err != nil {
		return fmt.Errorf("go-metrics global: %w", err)
	}
	return nil
}
