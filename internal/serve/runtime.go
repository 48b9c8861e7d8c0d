package serve

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the GOGC both binaries run with unless the GOGC
// environment variable says otherwise. Their live heap is a few MiB, so at
// Go's default of 100 the collector ran every few thousand requests and
// took about a tenth of the allocsvr's CPU under load (pprof: gcBgMarkWorker
// plus assists); 400 trades a few more MiB of heap for most of that.
const DefaultGCPercent = 400

// TuneRuntime applies DefaultGCPercent when GOGC is not set. Call it once
// at process start.
func TuneRuntime() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
