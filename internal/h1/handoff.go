package h1

import (
	"bufio"
	"net"
	"sync"
)

// chanListener is the listener the net/http server serves: it accepts the
// connections the front hands off.
type chanListener struct {
	addr net.Addr
	ch   chan net.Conn

	mu     sync.Mutex
	closed bool
	done   chan struct{}
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

// push hands c to the net/http server; false when it is closed.
func (l *chanListener) push(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		close(l.done)
	}
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// handoffConn replays the bytes the front buffered before reading the
// socket again; when the front's last read failed (a hang-up or its
// deadline in the middle of a request), it returns that error instead.
type handoffConn struct {
	net.Conn
	br  *bufio.Reader
	err error
}

func (c *handoffConn) Read(p []byte) (int, error) {
	if c.br.Buffered() > 0 {
		return c.br.Read(p)
	}
	if c.err != nil {
		return 0, c.err
	}
	return c.Conn.Read(p)
}

// CloseWrite lets net/http half-close as it does on a *net.TCPConn.
func (c *handoffConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
