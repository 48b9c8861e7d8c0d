package launch

import (
	"fmt"
	"net"
	"strings"
	"sync"
)

var (
	portMu    sync.Mutex
	portsUsed = map[int]bool{}
)

// FreePort returns a TCP port on host that was free a moment ago and that
// this process has not handed out before, so two Procs of one test never
// share a port even before either has bound it.
func FreePort(host string) (int, error) {
	portMu.Lock()
	defer portMu.Unlock()
	// A port handed out before is kept bound while looking further, so the
	// kernel cannot offer it again (it likes to reuse a port just closed).
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range 1024 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("cluster: pick a free port: %w", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		if !portsUsed[p] {
			l.Close()
			portsUsed[p] = true
			return p, nil
		}
		held = append(held, l)
	}
	return 0, fmt.Errorf("cluster: no unused free port on %s", host)
}

// PeersFlag renders the storesvr --peers value: ID=RAFTADDR@HTTPADDR,...
func PeersFlag(stores []*Proc) string {
	parts := make([]string, 0, len(stores))
	for _, s := range stores {
		parts = append(parts, s.NodeID+"="+s.RaftAddr+"@"+s.HTTPAddr)
	}
	return strings.Join(parts, ",")
}
