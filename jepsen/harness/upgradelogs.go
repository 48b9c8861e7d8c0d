package harness

import (
	"bufio"
	"os"
	"strings"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// exitKind sorts an exit on the base binary: a panic or a fatal runtime
// error is a crash, anything else a refusal (which its log must explain).
func exitKind(p *launch.Proc) string {
	for _, l := range linesSinceStart(p.LogPath) {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
			return "crashed"
		}
	}
	return "refused"
}

// lastLines are the last n lines p wrote in its latest lifetime.
func lastLines(path string, n int) []string {
	ls := linesSinceStart(path)
	return ls[max(0, len(ls)-n):]
}

// linesSinceStart are the log lines after the launcher's last start
// marker.
func linesSinceStart(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return []string{err.Error()}
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "=== cluster: start #") {
			out = out[:0]
			continue
		}
		out = append(out, l)
	}
	return out
}
