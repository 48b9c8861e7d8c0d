//go:build faults

package faults

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/coverage"
	"sort"
	"strings"
	"time"
)

// The fault harness measures which functions its scenarios reach with
// binaries built with `go build -cover`. Such a binary writes its
// counters only when it exits normally, and the harness ends most
// processes with SIGKILL; so with SEQSVR_FAULTS_COVER_FLUSH set (an
// interval) and GOCOVERDIR, a fault build writes its counters there that
// often, keeping only its newest file.
func init() {
	every, err := time.ParseDuration(os.Getenv("SEQSVR_FAULTS_COVER_FLUSH"))
	dir := os.Getenv("GOCOVERDIR")
	if err != nil || every <= 0 || dir == "" {
		return
	}
	go flushCover(dir, every)
}

func flushCover(dir string, every time.Duration) {
	// Started from this package's init: the instrumented packages
	// register their meta-data in their own init, after this one.
	time.Sleep(every)
	if err := coverage.WriteMetaDir(dir); err != nil {
		fmt.Fprintf(os.Stderr, "faults: coverage not flushed: %v\n", err)
		return // not built with -cover
	}
	mine := fmt.Sprintf(".%d.", os.Getpid())
	for range time.Tick(every) {
		if err := coverage.WriteCountersDir(dir); err != nil {
			fmt.Fprintf(os.Stderr, "faults: coverage counters not flushed: %v\n", err)
			return
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		var own []string
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "covcounters.") && strings.Contains(e.Name(), mine) {
				own = append(own, e.Name())
			}
		}
		// The names end in a nanosecond time: the last sorted is the newest
		// (same length within one process's lifetime).
		sort.Strings(own)
		for i := 0; i+1 < len(own); i++ {
			_ = os.Remove(filepath.Join(dir, own[i]))
		}
	}
}
