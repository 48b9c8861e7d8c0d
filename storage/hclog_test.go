package storage

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

func TestHclogAdapter(t *testing.T) {
	var buf bytes.Buffer
	l := newHclog(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), "raft")
	l.Debug("hidden")
	l.Named("net").With("peer", "p1").Warn("careful", "k", 1)
	out := buf.String()
	if strings.Contains(out, "hidden") || !strings.Contains(out, "level=WARN msg=careful") ||
		!strings.Contains(out, "logger=raft.net") || !strings.Contains(out, "peer=p1") || !strings.Contains(out, "k=1") {
		t.Fatalf("log output %q", out)
	}
	if l.IsDebug() || !l.IsInfo() {
		t.Fatal("levels not taken from the slog handler")
	}
}
