//go:build !hashicorpmetrics

package serve

// RaftMetricsWired is false: without -tags hashicorpmetrics raft emits to
// armon/go-metrics and its raft_* series never reach /metrics.
const RaftMetricsWired = false
