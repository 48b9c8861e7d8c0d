package h1

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"time"
)

// handshake runs the TLS handshake within handshakeTimeout; nothing is
// read as a request before it completes, and a client certificate the
// configuration requires is checked here, for the front's connections and
// the ones it hands to net/http alike. As net/http does, a client that
// speaks plain HTTP to the TLS port gets a 400 saying so.
func (c *conn) handshake() bool {
	s := c.srv
	_ = c.raw.SetDeadline(time.Now().Add(s.handshakeTimeout()))
	err := c.tc.HandshakeContext(s.ctx)
	if err == nil {
		_ = c.raw.SetDeadline(time.Time{})
		return true
	}
	var re tls.RecordHeaderError
	if errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader[:]) {
		_, _ = io.WriteString(re.Conn, "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n")
	}
	s.Logger.Debug("TLS handshake failed", "remote", c.raw.RemoteAddr().String(), "err", err)
	return false
}

// looksLikeHTTP reports whether the first bytes of a would-be TLS record
// start an HTTP/1 request (net/http's test: it answers those with a 400).
func looksLikeHTTP(hdr []byte) bool {
	for _, m := range []string{"GET /", "HEAD ", "POST ", "PUT /", "OPTIO"} {
		if bytes.HasPrefix(hdr, []byte(m)) {
			return true
		}
	}
	return false
}

// handshakeTimeout is net/http's: the shortest of ReadHeaderTimeout,
// ReadTimeout and WriteTimeout that is set. With none set net/http has
// none; the front then uses headerTimeout, so a silent client cannot hold
// a connection (and its goroutine) open forever.
func (s *Server) handshakeTimeout() time.Duration {
	var d time.Duration
	for _, v := range []time.Duration{s.HTTP.ReadHeaderTimeout, s.HTTP.ReadTimeout, s.HTTP.WriteTimeout} {
		if v > 0 && (d == 0 || v < d) {
			d = v
		}
	}
	if d == 0 {
		d = s.headerTimeout()
	}
	return d
}

// handOffH2 gives a connection that negotiated h2 to HTTP as the
// *tls.Conn itself, before anything was read from it: net/http's conn
// recognises a *tls.Conn from any listener, runs its (already completed)
// handshake again, which does nothing, and serves h2 through
// TLSNextProto, with Request.TLS set, exactly as under its own ServeTLS.
func (c *conn) handOffH2() bool {
	c.srv.handoffs[alpnH2].Add(1)
	if c.srv.handoff.push(c.tc) {
		return true
	}
	return false // net/http has shut down; serve's deferred close ends it
}

// tlsHandoffConn is a TLS connection handed to net/http after the front
// read from it. It is not a *tls.Conn (net/http must read the replayed
// bytes first), so net/http would serve it as plain HTTP/1.1; its
// ConnectionState method makes net/http (Go 1.26 and later: conn.serve
// checks for the method on any connection) set Request.TLS from it, so a
// handler sees the same Request.TLS, client certificates included, after
// a hand-off as on a connection net/http served from the start. Nothing
// in seqsvr reads Request.TLS today (auth is by bearer token, client
// certificates are checked at the handshake, and connect-go v1.21 does
// not look at it); this keeps it right for whatever does, and the tests
// check it.
type tlsHandoffConn struct {
	*handoffConn
	tc *tls.Conn
}

func (c *tlsHandoffConn) ConnectionState() tls.ConnectionState { return c.tc.ConnectionState() }
