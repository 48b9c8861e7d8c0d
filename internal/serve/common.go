package serve

import (
	"flag"
	"fmt"
	"time"
)

// Common holds the flags both binaries take besides their own: the body
// bound, the shutdown grace, the HTTP/1.1 front, logging and diagnostics. Embedded in a
// binary's config, its fields read as the config's own.
type Common struct {
	MaxBodyBytes  int64
	ShutdownGrace time.Duration
	FastHTTP      bool
	Log           LogConfig
	Debug         DebugConfig
	Security      Security
	Limits        Limits
}

// Register adds --max-body-bytes, --shutdown-grace, --fast-http, the
// logging flags, --pprof, the security flags (Security) and the limits
// (Limits) to fs.
func (c *Common) Register(fs *flag.FlagSet) {
	d := DefaultCommon()
	fs.Int64Var(&c.MaxBodyBytes, "max-body-bytes", d.MaxBodyBytes, "largest request body accepted")
	fs.DurationVar(&c.ShutdownGrace, "shutdown-grace", d.ShutdownGrace, "how long in-flight requests may finish on SIGINT/SIGTERM")
	fs.BoolVar(&c.FastHTTP, "fast-http", d.FastHTTP, "answer the hot calls (binary Connect NextIDs, NextIDRanges, NextSeq, ReserveSegment;\nthe Leaf GETs) on a lean HTTP/1.1 front before net/http; false serves every call with\nnet/http and connect-go")
	c.Log.Register(fs)
	c.Debug.Register(fs)
	c.Security.Register(fs)
	c.Limits.Register(fs)
}

// Check returns the problems with the parsed values, none when they are
// usable. Log settings are checked when the logger is built.
func (c *Common) Check() []error {
	errs := append(c.Security.Check(), c.Limits.Check()...)
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("--max-body-bytes must be positive, got %d", c.MaxBodyBytes))
	}
	return errs
}
