package launchtest

import (
	"bufio"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/launch"
)

// SkipShort skips a real-process test under -short.
func SkipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("real-process test")
	}
}

// StartCluster launches stores real storesvr processes and allocs
// allocsvrs with the extra flags given, and kills them when the test ends
// (see Start). It skips the test under -short.
func StartCluster(t *testing.T, stores, allocs int, storeArgs, allocArgs []string) *launch.Cluster {
	t.Helper()
	return Start(t, launch.Options{Stores: stores, Allocs: allocs, StoreArgs: storeArgs, AllocArgs: allocArgs})
}

// FastHTTPOff is the flag that turns the HTTP/1.1 front off.
const FastHTTPOff = "--fast-http=false"

// EachFastHTTP runs f as two subtests: the processes with the HTTP/1.1
// front (the default, flags empty) and without it (flags holds
// FastHTTPOff), so every answer is checked on both paths. f passes flags
// to every process it starts.
func EachFastHTTP(t *testing.T, f func(t *testing.T, flags []string)) {
	t.Run("fast-http=true", func(t *testing.T) { f(t, nil) })
	t.Run("fast-http=false", func(t *testing.T) { f(t, []string{FastHTTPOff}) })
}

// Context is a context ending after d or when the test ends.
func Context(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// RetryBackoff spaces a test's own retries (errs.Retry with Retry's
// policy).
var RetryBackoff = errs.Backoff{Min: 20 * time.Millisecond, Max: 200 * time.Millisecond}

// Retry is the errs.Retry policy of a test's own call as caller c: retried
// as every client retries (a leader change under a loaded machine answers
// unavailable, which is not what a test checks). Pair it with a
// request_id where a retried write must not count twice.
func Retry(c errs.Caller) errs.Policy {
	return errs.Policy{Caller: c, Backoff: RetryBackoff}
}

// Metric reads one unlabelled series from the /metrics of the process at
// base, and whether it is there.
func Metric(t *testing.T, base, name string) (float64, bool) {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	lines := bufio.NewScanner(res.Body)
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %q", name, lines.Text())
			}
			return f, true
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatalf("%s/metrics: %v", base, err)
	}
	return 0, false
}

// WantFront fails unless the process at base runs the HTTP/1.1 front
// exactly when flags leave it on: only the front exports its counter.
func WantFront(t *testing.T, base string, flags []string) {
	t.Helper()
	on := !slices.Contains(flags, FastHTTPOff)
	if _, has := Metric(t, base, "seqsvr_http_fast_requests_total"); has != on {
		t.Fatalf("%s: front counter exported %v, want %v (flags %q)", base, has, on, flags)
	}
}
