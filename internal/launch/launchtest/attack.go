package launchtest

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/poll"
)

// Target is a running process that Attack holds connections on.
type Target struct {
	Addr string      // host:port of its API
	TLS  *tls.Config // nil: plain HTTP; else trusts the server (and presents a client certificate if needed)
	Path string      // the procedure attacked, "/seqsvr.v1.AllocService/NextIDs"
	// Token is valid for Path: the shapes with a token show that a token
	// is no licence to hold a connection or memory either.
	Token string
	Pid   int
	// BodyTimeout and H2MaxStreams are the process's --body-timeout and
	// --http2-max-streams.
	BodyTimeout  time.Duration
	H2MaxStreams int
	// Normal is one call of a well-behaved client (connected from another
	// address than the attack's); Attack measures its latency in calm and
	// during each shape.
	Normal func(ctx context.Context) error
	// Base and Client reach the target's /metrics from the normal
	// client's address.
	Base   string
	Client *http.Client
}

// Shape is one way to hold a connection open without finishing a request.
type Shape struct {
	Name string
	// run writes on c and reads its answers until the server answered or
	// closed; it returns the status line of an HTTP/1.1 answer ("" for
	// none) and what it saw wrong.
	run func(a *attackConn) (status string, err error)
	// check judges one connection's outcome.
	check func(status string, refused int) error
}

// Shapes are the four shapes of a slow or unauthenticated client that
// holds a server's memory, each held on one connection:
// no token with a large Content-Length and a stalled body (answered 401
// at once, with Connection: close); a chunked body trickled one byte
// every 1.5 s with a valid token (cut off by --body-min-rate); HTTP/2
// streams held open with a valid token, more than --http2-max-streams on
// each connection (the extras refused, the rest cut off by
// --body-timeout); a valid token whose body stalls (cut off by
// --body-timeout or --max-body-bytes-in-flight).
var Shapes = []Shape{
	{Name: "no-token-stall", run: noTokenStall, check: func(status string, _ int) error {
		if !strings.HasPrefix(status, "HTTP/1.1 401 ") {
			return fmt.Errorf("answered %q, want 401 before any body was read", status)
		}
		return nil
	}},
	{Name: "chunked-trickle", run: chunkedTrickle, check: answeredNot200},
	{Name: "h2-streams", run: h2Streams, check: func(_ string, refused int) error {
		if refused < h2Extra {
			return fmt.Errorf("%d streams over the cap refused, want %d", refused, h2Extra)
		}
		return nil
	}},
	{Name: "token-stall", run: tokenStall, check: answeredNot200},
}

func answeredNot200(status string, _ int) error {
	if strings.HasPrefix(status, "HTTP/1.1 200 ") {
		return fmt.Errorf("answered %q to an unfinished body", status)
	}
	return nil
}

// AttackConns is how many connections each shape holds at once.
const AttackConns = 200

// AttackSlack is added to every bound: the machine may be busy (the
// handshakes of 200 TLS connections at once on a shared 2-core box took
// up to 3 s of a 4.9 s hold at load average 30, and an HTTP/2 shape's
// 200 connections 9.3 s in all at load average 21 in a whole make test).
// A server that bounds nothing holds every connection until the client's
// read deadline (BodyTimeout + 2 x AttackSlack), so the check still fails.
const AttackSlack = 10 * time.Second

// MaxRSSGrowth bounds how far the process's resident memory may rise
// above its level before a shape while the shape's connections are held.
// Without the limits each no-token connection would make the server
// buffer the 256 KiB it was sent, in a buffer grown by doubling (200 of
// them: well over 64 MiB); a refused connection costs nothing once answered, and
// a held one its buffers, goroutines and what --max-body-bytes-in-flight
// lets it send. (Go returns freed memory to the system slowly, so each
// shape is measured from the level the last one left.)
const MaxRSSGrowth = 64 << 20

// Attack runs every shape against tg with AttackConns connections, one
// shape after the other, and checks that each connection is answered or
// closed within the shape's bound, that the process's resident memory
// stays within MaxRSSGrowth of its level before, and that the normal
// client kept answering. It logs the normal client's p99 in calm and
// under each shape.
func Attack(t *testing.T, name string, tg Target) {
	t.Helper()
	ctx := Context(t, 2*time.Minute)
	calm := normalLatencies(ctx, t, tg, 300*time.Millisecond, nil)
	t.Logf("%s: RSS before %d MiB; normal client calm p99 %v (%d calls)", name, rss(t, tg.Pid)>>20, p99(calm), len(calm))
	for _, sh := range Shapes {
		// The last shape's connections may still be closing on the
		// server's side (net/http lingers 500 ms after a refusal); they
		// count against the per-address bound until then.
		poll.UntilCtx(ctx, t, "the last shape's connections closed", func() bool { return openConns(t, tg) <= 10 })
		base := rss(t, tg.Pid)
		bound := tg.BodyTimeout + AttackSlack
		done := make(chan struct{})
		var peak int64
		var sampler sync.WaitGroup
		sampler.Go(func() {
			for {
				peak = max(peak, rss(t, tg.Pid))
				select {
				case <-done:
					return
				case <-time.After(20 * time.Millisecond):
				}
			}
		})
		lat := make(chan []time.Duration, 1)
		go func() { lat <- normalLatencies(ctx, t, tg, 0, done) }()
		start := time.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		var longest time.Duration
		var failures []string
		for i := range AttackConns {
			wg.Go(func() {
				a, err := dialAttack(ctx, tg)
				if err != nil {
					mu.Lock()
					failures = append(failures, fmt.Sprintf("conn %d: dial: %v", i, err))
					mu.Unlock()
					return
				}
				defer a.Close()
				began := time.Now()
				status, err := sh.run(a)
				took := time.Since(began)
				if err == nil {
					err = sh.check(status, a.refused)
				}
				if err == nil && took > bound {
					err = fmt.Errorf("held %v, bound %v", took, bound)
				}
				if err != nil && status != "" {
					err = fmt.Errorf("%w (answered %q)", err, status)
				}
				mu.Lock()
				longest = max(longest, took)
				if err != nil {
					failures = append(failures, fmt.Sprintf("conn %d: %v", i, err))
				}
				mu.Unlock()
			})
		}
		wg.Wait()
		close(done)
		sampler.Wait()
		during := <-lat
		t.Logf("%s %s: %d conns all ended in %v (longest %v, bound %v); RSS peak %d MiB (+%d MiB); normal client p99 %v under attack vs %v calm (%d calls)",
			name, sh.Name, AttackConns, time.Since(start).Round(time.Millisecond), longest.Round(time.Millisecond), bound,
			peak>>20, (peak-base)>>20, p99(during), p99(calm), len(during))
		if len(failures) > 0 {
			t.Errorf("%s %s: %d of %d connections wrong, first: %s", name, sh.Name, len(failures), AttackConns, failures[0])
		}
		if peak-base > MaxRSSGrowth {
			t.Errorf("%s %s: RSS grew by %d MiB, bound %d MiB", name, sh.Name, (peak-base)>>20, MaxRSSGrowth>>20)
		}
		if len(during) == 0 || p99(during) > 5*time.Second {
			t.Errorf("%s %s: normal client p99 %v over %d calls during the attack", name, sh.Name, p99(during), len(during))
		}
	}
}

// NormalFrom is the local address a well-behaved client dials from, apart
// from the attack's 127.0.0.1 (all of 127/8 is loopback on Linux).
const NormalFrom = "127.0.0.2"

// DialerFrom dials from the IP address ip.
func DialerFrom(ip string) *net.Dialer {
	return &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 15 * time.Second}
}

// ClientFrom is an HTTP client (HTTP/1.1, or HTTPS with cfg) whose
// connections come from ip.
func ClientFrom(ip string, cfg *tls.Config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = DialerFrom(ip).DialContext
	if cfg != nil {
		tr.TLSClientConfig = cfg.Clone()
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

// normalLatencies calls tg.Normal in a loop for d, or until stop is
// closed, and returns each call's latency; a failed call fails the test.
func normalLatencies(ctx context.Context, t *testing.T, tg Target, d time.Duration, stop <-chan struct{}) []time.Duration {
	var out []time.Duration
	end := time.Now().Add(d)
	for {
		if stop == nil && time.Now().After(end) {
			return out
		}
		select {
		case <-stop:
			return out
		default:
		}
		began := time.Now()
		if err := tg.Normal(ctx); err != nil {
			t.Errorf("normal client: %v", err)
			return out
		}
		out = append(out, time.Since(began))
	}
}

func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[(len(s)*99+99)/100-1].Round(10 * time.Microsecond)
}

// openConns is the target's seqsvr_http_open_connections.
func openConns(t *testing.T, tg Target) int {
	resp, err := tg.Client.Get(tg.Base + "/metrics")
	if err != nil {
		t.Errorf("metrics: %v", err)
		return 0
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	for lines.Scan() {
		if v, ok := strings.CutPrefix(lines.Text(), "seqsvr_http_open_connections "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return int(f)
		}
	}
	t.Errorf("%s/metrics has no seqsvr_http_open_connections", tg.Base)
	return 0
}

// rss is the resident memory of pid, from /proc/PID/status.
func rss(t *testing.T, pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Errorf("rss: %v", err)
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Errorf("rss: %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Errorf("rss: no VmRSS in /proc/%d/status", pid)
	return 0
}
