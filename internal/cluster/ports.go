package cluster

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
	for range 64 {
		l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			return 0, fmt.Errorf("cluster: pick a free port: %w", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !portsUsed[p] {
			portsUsed[p] = true
			return p, nil
		}
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
