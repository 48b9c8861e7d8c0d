// Package result is the JSON line bench/loadgen prints and the benchmarks
// parse: one definition for both sides of the pipe.
package result

import "github.com/HdrHistogram/hdrhistogram-go"

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

	// Attempts counts the requests sent when a call may take several (a
	// compare-and-set that lost a race and was retried); 0 when every call
	// is one request.
	Attempts int64 `json:"attempts,omitempty"`
	// StartUnixNano is when the measured time began (after the warm-up),
	// so a caller can place an event it caused (a kill) on the timeline.
	StartUnixNano int64 `json:"start_unix_nano,omitempty"`
	// MaxGapUs is the longest time in the measured run during which no
	// call completed successfully, by any worker: the stall a failover
	// causes, as every client of the service saw it.
	MaxGapUs int64 `json:"max_gap_us,omitempty"`
	// Gaps (with -timeline) are the times of at least GapMinUs without a
	// successful call, in order, so a caller can pick the one around an
	// event it caused; at most 1000 are kept.
	Gaps []Gap `json:"gaps,omitempty"`
	// BucketMs and Timeline (with -timeline): calls that succeeded and
	// calls that failed in each BucketMs-long slice of the measured run,
	// by completion time.
	BucketMs int64    `json:"bucket_ms,omitempty"`
	Timeline []Bucket `json:"timeline,omitempty"`
	// Hist (with -hist) is the whole latency histogram in microseconds,
	// so runs can be merged exactly and drawn as a CDF.
	Hist *hdrhistogram.Snapshot `json:"hist,omitempty"`
}

// GapMinUs is the shortest gap Result.Gaps lists.
const GapMinUs = 10_000

// Gap is a time without a successful call: it began StartUs after the
// measured time began (at the success before it) and lasted Us.
type Gap struct {
	StartUs int64 `json:"start_us"`
	Us      int64 `json:"us"`
}

// Bucket is one slice of a timeline.
type Bucket struct {
	OK     int64 `json:"ok"`
	Errors int64 `json:"errors"`
}
