package launch

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// FreePort returns a TCP port on host that was free a moment ago and that
// no other caller of FreePort holds, in this process or in any other on
// the machine (go test runs packages as parallel processes, each starting
// its own clusters).
//
// The port comes from below the kernel's ephemeral range
// (net.ipv4.ip_local_port_range). A port from that range that was free
// when picked can become the local port of any outgoing connection on the
// machine before the process meant for it binds it, or while a killed
// member is down before its restart on the same port, and that start then
// fails on "address already in use". Below the range only a listener can
// take it, and every listener a test starts gets its port from here.
func FreePort(host string) (int, error) { return testPorts.free(host) }

// testPorts is this process's pool. Its claims are flock(2)ed files named
// by port in one directory, held open until the process exits (the kernel
// drops the locks then, even on SIGKILL), so two processes never hand out
// one port.
var testPorts = &portPool{dir: filepath.Join(os.TempDir(), "seqsvr-test-ports")}

// portLow is the bottom of the range FreePort picks from; the top is the
// ephemeral range's bottom (at most portHigh). cmd/allocsvr's walk-through
// test takes fixed blocks from 20000 up, so the two stay apart.
const (
	portLow  = 10000
	portHigh = 20000
)

type portPool struct {
	dir    string
	lo, hi int // the range [lo, hi); zero: portLow to the ephemeral range
	mu     sync.Mutex
	held   map[int]*os.File // claimed ports; a nil file: claimed in this process only
	shared bool             // the lock directory exists: claims are machine-wide
}

func (pp *portPool) free(host string) (int, error) {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	if pp.held == nil {
		// Once per pool. A directory that cannot be made (another
		// user's) leaves the claims to this process alone.
		pp.held = map[int]*os.File{}
		pp.shared = os.MkdirAll(pp.dir, 0o1777) == nil
		if pp.hi == 0 {
			pp.lo, pp.hi = portLow, min(portHigh, ephemeralLow())
		}
	}
	lo, hi := pp.lo, pp.hi
	for range 4 * (hi - lo) {
		p := lo + rand.IntN(hi-lo)
		if _, ok := pp.held[p]; ok {
			continue
		}
		var f *os.File
		if pp.shared {
			var ok bool
			if f, ok = claimPort(pp.dir, p); !ok {
				continue // another process holds it
			}
		}
		// Claimed now either way: a port some other program listens on is
		// not tried again.
		pp.held[p] = f
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(p)))
		if err != nil {
			continue
		}
		l.Close()
		return p, nil
	}
	return 0, fmt.Errorf("cluster: no free port on %s in %d-%d", host, lo, hi-1)
}

// ephemeralLow is the bottom of the kernel's ephemeral port range, or
// portHigh when it cannot be read.
func ephemeralLow() int {
	f, err := os.Open("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return portHigh
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return portHigh
	}
	lo, err := strconv.Atoi(fields[0])
	if err != nil || lo <= portLow+1000 {
		return portHigh
	}
	return lo
}

// PeersFlag renders the storesvr --peers value: ID=RAFTADDR@HTTPADDR,...
func PeersFlag(stores []*Proc) string {
	parts := make([]string, 0, len(stores))
	for _, s := range stores {
		parts = append(parts, s.NodeID+"="+s.RaftAddr+"@"+s.HTTPAddr)
	}
	return strings.Join(parts, ",")
}
