package serve

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// LogConfig holds the logging flags shared by both binaries.
type LogConfig struct {
	Level  string
	Format string
}

// Register adds --log-level and --log-format to fs.
func (c *LogConfig) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Level, "log-level", "info", "log level: debug, info, warn or error")
	fs.StringVar(&c.Format, "log-format", "text", "log format: text or json")
}

// NewLogger builds the process logger writing to w.
func (c LogConfig) NewLogger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", c.Level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(c.Format) {
	case "text", "":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", c.Format)
}
