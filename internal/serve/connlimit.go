package serve

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// limitListener bounds the connections open at once, in total and per
// client IP address, so a flood of connections sheds load instead of
// running the process out of descriptors and memory. A connection over
// either bound is not served: on plain HTTP it is answered
// "503 Service Unavailable" with Connection: close (a clear, retryable
// answer for an HTTP/1.1 client; an h2c client reads it as a broken
// preface and retries elsewhere too), under TLS it is closed before the
// handshake, which is the CPU the bound protects. Each connection counts
// from Accept until its Close, whoever closes it (the front, net/http
// after a hand-off, or TLS).
type limitListener struct {
	net.Listener
	max, perAddr int  // 0: no bound
	plain        bool // answer 503 before closing

	mu     sync.Mutex
	open   int
	byAddr map[string]int

	refusing atomic.Int32 // shed connections still being answered
	shed     atomic.Uint64
}

// maxRefusing bounds the goroutines answering shed connections; past it a
// shed connection is closed without an answer.
const maxRefusing = 64

// shedAnswer is what a shed plain-HTTP connection reads.
const shedAnswer = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n" +
	"Retry-After: 1\r\nContent-Length: 21\r\nConnection: close\r\n\r\ntoo many connections\n"

func newLimitListener(ln net.Listener, max, perAddr int, plain bool) net.Listener {
	if max <= 0 && perAddr <= 0 {
		return ln
	}
	return &limitListener{Listener: ln, max: max, perAddr: perAddr, plain: plain, byAddr: map[string]int{}}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := hostOf(c.RemoteAddr())
		if l.take(ip) {
			return &limitedConn{Conn: c, l: l, ip: ip}, nil
		}
		l.shed.Add(1)
		if !l.plain || l.refusing.Add(1) > maxRefusing {
			if l.plain {
				l.refusing.Add(-1)
			}
			c.Close()
			continue
		}
		go l.refuse(c)
	}
}

// refuse answers 503, then reads what the client sent for up to a second
// before closing: closing with unread bytes would reset the connection
// and the client might never read the answer.
func (l *limitListener) refuse(c net.Conn) {
	defer l.refusing.Add(-1)
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, shedAnswer); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_, _ = io.CopyN(io.Discard, c, 64<<10)
}

func (l *limitListener) take(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.open >= l.max || l.perAddr > 0 && l.byAddr[ip] >= l.perAddr {
		return false
	}
	l.open++
	l.byAddr[ip]++
	return true
}

func (l *limitListener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byAddr[ip]--; l.byAddr[ip] <= 0 {
		delete(l.byAddr, ip)
	}
}

// counts are the open and shed connections since start.
func (l *limitListener) counts() (open int, shed uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.shed.Load()
}

func hostOf(a net.Addr) string {
	if ta, ok := a.(*net.TCPAddr); ok {
		return string(ta.IP.To16())
	}
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// limitedConn gives its slot back once, at its first Close.
type limitedConn struct {
	net.Conn
	l    *limitListener
	ip   string
	once sync.Once
}

func (c *limitedConn) Close() error {
	c.once.Do(func() { c.l.release(c.ip) })
	return c.Conn.Close()
}

// CloseWrite keeps the half-close net/http and the front use on a TCP
// connection.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
