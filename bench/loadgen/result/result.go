// Package result is the JSON line bench/loadgen prints and the benchmarks
// parse: one definition for both sides of the pipe.
package result

// Result is one load generator run: throughput over the measured time
// (after the warm-up) and latency percentiles in microseconds.
type Result struct {
	Target      string  `json:"target"`
	Concurrency int     `json:"concurrency"`
	Count       int     `json:"count"`
	Seconds     float64 `json:"seconds"`
	Ops         int64   `json:"ops"`
	IDs         int64   `json:"ids"`
	Errors      int64   `json:"errors"`
	FirstError  string  `json:"first_error,omitempty"`
	OpsPerSec   float64 `json:"ops_per_sec"`
	IDsPerSec   float64 `json:"ids_per_sec"`
	P50us       int64   `json:"p50_us"`
	P99us       int64   `json:"p99_us"`
	P999us      int64   `json:"p999_us"`
	MaxUs       int64   `json:"max_us"`
}
