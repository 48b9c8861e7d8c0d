package serve

import (
	"flag"
	"net/http"
	"net/http/pprof"
)

// DebugConfig holds the opt-in diagnostics flags shared by both binaries.
type DebugConfig struct {
	Pprof bool
}

// Register adds --pprof to fs.
func (c *DebugConfig) Register(fs *flag.FlagSet) {
	fs.BoolVar(&c.Pprof, "pprof", false, "serve Go profiles under /debug/pprof/ on the HTTP port (off by default: profiles reveal internals and cost CPU while taken)")
}

// mountPprof adds net/http/pprof's handlers to mux. They are mounted
// explicitly, never through the package's DefaultServeMux side effect, so
// nothing is exposed unless the operator asked for it.
func mountPprof(mux *http.ServeMux) {
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("POST /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
}
