//go:build hashicorpmetrics

package serve

// RaftMetricsWired reports whether hashicorp/raft emits to
// hashicorp/go-metrics (and so reaches /metrics): only with
// -tags hashicorpmetrics, which `make build` always passes.
const RaftMetricsWired = true
