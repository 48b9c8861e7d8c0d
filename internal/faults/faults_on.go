//go:build faults

package faults

import (
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Enabled reports whether this binary was built with -tags faults.
const Enabled = true

var (
	bugs   = parseBugs(os.Getenv("SEQSVR_FAULTS_BUGS"))
	offset atomic.Int64 // nanoseconds
)

func init() {
	if v := os.Getenv("SEQSVR_FAULTS_CLOCK_OFFSET_MS"); v != "" {
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil {
			offset.Store(int64(time.Duration(ms) * time.Millisecond))
		}
	}
}

func parseBugs(s string) map[string]bool {
	m := map[string]bool{}
	for _, b := range strings.Split(s, ",") {
		if b = strings.TrimSpace(b); b != "" {
			m[b] = true
		}
	}
	return m
}

// Bug reports whether the named bug is planted in this process.
func Bug(name string) bool { return bugs[name] }

// ClockOffset is the injected clock skew added to Now.
func ClockOffset() time.Duration { return time.Duration(offset.Load()) }

// SetClockOffset steps the process clock seen through Now.
func SetClockOffset(d time.Duration) { offset.Store(int64(d)) }

// AdminHandler serves the harness's controls:
//
//	GET  /debug/faults/clock            -> current offset in ms
//	POST /debug/faults/clock?offset_ms=N -> set the offset (may be negative)
func AdminHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/faults/clock", func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			ms, err := strconv.ParseInt(r.URL.Query().Get("offset_ms"), 10, 64)
			if err != nil {
				http.Error(w, "offset_ms must be an integer", http.StatusBadRequest)
				return
			}
			SetClockOffset(time.Duration(ms) * time.Millisecond)
		}
		fmt.Fprintln(w, ClockOffset().Milliseconds())
	})
	return mux
}
