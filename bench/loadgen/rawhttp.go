package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"
)

// rawClient is a minimal HTTP/1.1 client over one kept-alive TCP
// connection: the request bytes are built once, the response is parsed by
// hand (status line, headers, Content-Length or chunked body). It exists
// so every HTTP target costs the generator about what a RESP round trip
// costs it, instead of net/http's client machinery dominating the shared
// CPU. One rawClient belongs to one worker; it is not safe for concurrent
// use. Over https it speaks TLS (HTTP/1.1 by ALPN) on the same kept-alive
// connection, so the handshake is paid once per worker, not per call.
type rawClient struct {
	addr string
	tls  *tls.Config // nil: plain TCP
	reqs [][]byte    // sent in turn, one per call
	next int
	conn net.Conn
	r    *bufio.Reader
	body []byte
}

// newRawClient prepares method path on the host of base with the given
// extra headers, one request per body; calls send them in turn (a single
// body is sent unchanged on every call). An https base needs tlsCfg (the
// CA to trust); an http one must have none.
func newRawClient(base, method, path string, headers map[string]string, tlsCfg *tls.Config, bodies ...[]byte) (*rawClient, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	switch {
	case u.Host == "" || u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("raw client needs an http:// or https://host:port URL, got %q", base)
	case u.Scheme == "https" && tlsCfg == nil:
		return nil, fmt.Errorf("raw client: %s needs -tls-ca or -insecure", base)
	case u.Scheme == "http" && tlsCfg != nil:
		return nil, fmt.Errorf("raw client: TLS options given for the plain %s", base)
	}
	c := &rawClient{addr: u.Host}
	if tlsCfg != nil {
		c.tls = tlsCfg.Clone()
		// The raw client parses HTTP/1.1 only: ask for it by ALPN.
		c.tls.NextProtos = []string{"http/1.1"}
	}
	for _, body := range bodies {
		var b bytes.Buffer
		fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, u.Path+path, u.Host)
		for k, v := range headers {
			fmt.Fprintf(&b, "%s: %s\r\n", k, v)
		}
		if body != nil || method == "POST" {
			fmt.Fprintf(&b, "Content-Length: %d\r\n", len(body))
		}
		b.WriteString("\r\n")
		b.Write(body)
		c.reqs = append(c.reqs, b.Bytes())
	}
	if len(c.reqs) == 0 {
		return nil, errors.New("raw client needs at least one request body (nil for none)")
	}
	return c, nil
}

// do sends the request and returns the status code and the body, which is
// valid until the next call. Any protocol error closes the connection so
// the next call starts clean.
func (c *rawClient) do() (int, []byte, error) {
	if c.conn == nil {
		conn, err := c.dial()
		if err != nil {
			return 0, nil, err
		}
		c.conn, c.r = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	// A hung server must not hang the worker past the run.
	if err := c.conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		c.conn.Close()
		c.conn = nil
		return 0, nil, err
	}
	status, body, err := c.roundTrip()
	if err != nil {
		c.conn.Close()
		c.conn = nil
	}
	return status, body, err
}

// dial opens the worker's connection, with the TLS handshake done here so
// a failed handshake is reported as such rather than as a bad response.
func (c *rawClient) dial() (net.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	if c.tls == nil {
		return d.Dial("tcp", c.addr)
	}
	conn, err := tls.DialWithDialer(d, "tcp", c.addr, c.tls)
	if err != nil {
		return nil, err
	}
	if p := conn.ConnectionState().NegotiatedProtocol; p != "" && p != "http/1.1" {
		conn.Close()
		return nil, fmt.Errorf("server chose protocol %q, want http/1.1", p)
	}
	return conn, nil
}

func (c *rawClient) roundTrip() (int, []byte, error) {
	req := c.reqs[c.next]
	c.next = (c.next + 1) % len(c.reqs)
	if _, err := c.conn.Write(req); err != nil {
		return 0, nil, err
	}
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length, chunked, closing := -1, false, false
	for {
		h, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		k, v, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return 0, nil, fmt.Errorf("bad header %q", h)
		}
		v = bytes.TrimSpace(v)
		switch {
		case asciiEqualFold(k, "Content-Length"):
			if length, err = strconv.Atoi(string(v)); err != nil || length < 0 {
				return 0, nil, fmt.Errorf("bad Content-Length %q", v)
			}
		case asciiEqualFold(k, "Transfer-Encoding"):
			chunked = asciiEqualFold(v, "chunked")
		case asciiEqualFold(k, "Connection"):
			closing = asciiEqualFold(v, "close")
		}
	}
	c.body = c.body[:0]
	switch {
	case chunked:
		if err := c.readChunked(); err != nil {
			return 0, nil, err
		}
	case length >= 0:
		if cap(c.body) < length {
			c.body = make([]byte, length)
		}
		c.body = c.body[:length]
		if _, err := io.ReadFull(c.r, c.body); err != nil {
			return 0, nil, err
		}
	default:
		return 0, nil, errors.New("response without Content-Length or chunked body")
	}
	if closing {
		return status, c.body, errServerClosed
	}
	return status, c.body, nil
}

// errServerClosed reports a good response on a connection the server is
// closing; the caller counts the response and reconnects next time.
var errServerClosed = errors.New("server closed the connection")

func (c *rawClient) readChunked() error {
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return err
		}
		line = bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		n, err := strconv.ParseUint(string(line), 16, 32)
		if err != nil {
			return fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			// Trailers, then the empty line.
			for {
				t, err := c.r.ReadSlice('\n')
				if err != nil {
					return err
				}
				if len(bytes.TrimRight(t, "\r\n")) == 0 {
					return nil
				}
			}
		}
		start := len(c.body)
		c.body = append(c.body, make([]byte, n)...)
		if _, err := io.ReadFull(c.r, c.body[start:]); err != nil {
			return err
		}
		if _, err := c.r.Discard(2); err != nil { // CRLF after the data
			return err
		}
	}
}

func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		x, y := b[i], s[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}
