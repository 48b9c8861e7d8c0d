package storage

import (
	"context"
	"io"
	"log"
	"log/slog"

	"github.com/hashicorp/go-hclog"
)

// hclogAdapter lets hashicorp/raft (which takes an hclog.Logger) write
// through the process's slog.Logger, so all logs share one format.
type hclogAdapter struct {
	base *slog.Logger // without name or implied args
	l    *slog.Logger
	name string
	args []interface{}
}

func newHclog(base *slog.Logger, name string) hclog.Logger {
	return &hclogAdapter{base: base, l: base.With("logger", name), name: name}
}

func toSlogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace, hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	default:
		return slog.LevelInfo
	}
}

func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...interface{}) {
	if level == hclog.Off {
		return
	}
	a.l.Log(context.Background(), toSlogLevel(level), msg, args...)
}

func (a *hclogAdapter) Trace(msg string, args ...interface{}) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...interface{}) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...interface{})  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...interface{})  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...interface{}) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) enabled(l slog.Level) bool { return a.l.Enabled(context.Background(), l) }
func (a *hclogAdapter) IsTrace() bool             { return a.enabled(slog.LevelDebug) }
func (a *hclogAdapter) IsDebug() bool             { return a.enabled(slog.LevelDebug) }
func (a *hclogAdapter) IsInfo() bool              { return a.enabled(slog.LevelInfo) }
func (a *hclogAdapter) IsWarn() bool              { return a.enabled(slog.LevelWarn) }
func (a *hclogAdapter) IsError() bool             { return a.enabled(slog.LevelError) }

func (a *hclogAdapter) ImpliedArgs() []interface{} { return a.args }

func (a *hclogAdapter) With(args ...interface{}) hclog.Logger {
	return &hclogAdapter{base: a.base, l: a.l.With(args...), name: a.name, args: append(append([]interface{}{}, a.args...), args...)}
}

func (a *hclogAdapter) Name() string { return a.name }

func (a *hclogAdapter) Named(name string) hclog.Logger {
	if a.name != "" {
		name = a.name + "." + name
	}
	return a.ResetNamed(name)
}

func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	return &hclogAdapter{base: a.base, l: a.base.With("logger", name).With(a.args...), name: name, args: a.args}
}

// SetLevel is ignored: the slog handler owns the level.
func (a *hclogAdapter) SetLevel(hclog.Level) {}

func (a *hclogAdapter) GetLevel() hclog.Level {
	switch {
	case a.enabled(slog.LevelDebug):
		return hclog.Debug
	case a.enabled(slog.LevelInfo):
		return hclog.Info
	case a.enabled(slog.LevelWarn):
		return hclog.Warn
	default:
		return hclog.Error
	}
}

func (a *hclogAdapter) StandardLogger(*hclog.StandardLoggerOptions) *log.Logger {
	return slog.NewLogLogger(a.l.Handler(), slog.LevelInfo)
}

func (a *hclogAdapter) StandardWriter(*hclog.StandardLoggerOptions) io.Writer {
	return a.StandardLogger(nil).Writer()
}
