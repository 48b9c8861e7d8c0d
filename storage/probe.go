package storage

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// probeTimeout bounds the connection to one address of a member, and
// separately what it answers there.
const probeTimeout = 2 * time.Second

// PeerProbe is what a recovery learned of one other member by calling its
// HTTP and Raft addresses.
type PeerProbe struct {
	ID string
	// Answered says what answered, one line per address ("HTTP
	// 10.0.0.2:8082: 401 Unauthorized"). Anything at all counts: a TLS
	// alert, a refused token or handshake, a bare TCP accept. The member
	// (or something on its address) is alive.
	Answered []string
	// Unreached says why an address could not be reached at all
	// (connection refused, a timeout, a name that does not resolve).
	Unreached []string
}

// Alive: something answered on one of the member's addresses.
func (p PeerProbe) Alive() bool { return len(p.Answered) > 0 }

// ProbePeers calls every member of st but cfg.NodeID on its HTTP and Raft
// addresses, all at once, within about 2 x probeTimeout. A member that
// cannot be reached is not known to be gone: a dead host and a cut
// network look alike from here, so only the operator can say it is lost.
func ProbePeers(ctx context.Context, cfg Config, st *seqsvrv1.FSMSnapshot) []PeerProbe {
	c, err := cfg.withDefaults()
	if err != nil {
		c = cfg
		c.HTTPClient, c.HTTPScheme = DefaultHTTPClient(), "http"
	}
	var out []PeerProbe
	for _, m := range st.GetMembers() {
		if m.GetId() != c.NodeID {
			out = append(out, PeerProbe{ID: m.GetId()})
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	i := 0
	for _, m := range st.GetMembers() {
		if m.GetId() == c.NodeID {
			continue
		}
		p := &out[i]
		i++
		for _, a := range []struct{ kind, addr string }{{"HTTP", m.GetHttpAddr()}, {"Raft", m.GetRaftAddr()}} {
			if a.addr == "" {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				answer, unreached := probeAddr(ctx, c, a.kind, a.addr)
				mu.Lock()
				defer mu.Unlock()
				if answer != "" {
					p.Answered = append(p.Answered, fmt.Sprintf("%s %s: %s", a.kind, a.addr, answer))
				} else {
					p.Unreached = append(p.Unreached, fmt.Sprintf("%s %s: %s", a.kind, a.addr, unreached))
				}
			}()
		}
	}
	wg.Wait()
	for _, p := range out {
		slices.Sort(p.Answered) // "HTTP ..." before "Raft ..."
		slices.Sort(p.Unreached)
	}
	return out
}

// probeAddr connects to addr: no connection is the unreached reason; a
// connection is an answer, described by what the member says to a
// /healthz request on its HTTP address.
func probeAddr(ctx context.Context, c Config, kind, addr string) (answer, unreached string) {
	host := addr
	if _, rest, ok := strings.Cut(host, "://"); ok {
		host = strings.TrimSuffix(rest, "/")
	}
	dctx, cancel := context.WithTimeout(ctx, probeTimeout)
	conn, err := (&net.Dialer{}).DialContext(dctx, "tcp", host)
	cancel()
	if err != nil {
		return "", err.Error()
	}
	conn.Close()
	if kind != "HTTP" {
		return "accepts connections", ""
	}
	base := addr
	if !strings.Contains(base, "://") {
		base = c.HTTPScheme + "://" + base
	}
	hctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(hctx, http.MethodGet, base+"/healthz", nil)
	if err != nil {
		return "accepts connections", ""
	}
	res, err := c.HTTPClient.Do(req)
	if err != nil {
		return "accepts connections, then: " + err.Error(), ""
	}
	res.Body.Close()
	return res.Status, ""
}
