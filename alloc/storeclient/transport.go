package storeclient

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"

	"github.com/seqsvr/seqsvr/internal/tlsconf"
)

// MaxIdleConnsPerHost is how many kept-alive connections the default
// HTTPClient holds per store member. It must cover the caller's
// concurrency: with fewer, every burst above it closes connections as they
// come back and dials (and, over TLS, handshakes) new ones, which on the
// 2-core bench box cost more CPU than the calls themselves.
const MaxIdleConnsPerHost = 256

// maxWholeBody is the largest request body sent in the same write as the
// request head (store requests are tens of bytes; a bulk one is not held).
const maxWholeBody = 64 << 10

// defaultHTTPClient is the HTTPClient of a Client built without one:
// HTTP/1.1 with keep-alive over a pool of MaxIdleConnsPerHost connections
// per member (the store's fast HTTP/1.1 front answers ReserveSegment there,
// and Go's HTTP/1.1 client costs less CPU per unary call than its HTTP/2
// one), TLS from tc following its CA file (tlsconf.Transport), and each
// request's head and small body in one write (wholeBody).
func defaultHTTPClient(base *http.Transport, tc *tls.Config) *http.Client {
	tr := base.Clone()
	tr.MaxIdleConns = 0 // no limit across members; per member below
	tr.MaxIdleConnsPerHost = MaxIdleConnsPerHost
	tr.ForceAttemptHTTP2 = false
	var p http.Protocols
	p.SetHTTP1(true)
	tr.Protocols = &p
	return &http.Client{Transport: wholeBody{tlsconf.Transport(tr, tc)}}
}

// wholeBody hands the transport a small request body as an in-memory
// reader. connect-go's unary body is its own reader type, and for a body
// net/http does not know to be in memory it flushes the head first and
// writes the body apart: two writes, two packets, and a server that wakes
// twice per call. An in-memory body goes out in the same buffered write.
type wholeBody struct{ rt http.RoundTripper }

func (w wholeBody) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody || req.ContentLength <= 0 || req.ContentLength > maxWholeBody {
		return w.rt.RoundTrip(req)
	}
	buf := make([]byte, req.ContentLength)
	_, err := io.ReadFull(req.Body, buf)
	if cerr := req.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	r := new(http.Request)
	*r = *req
	r.Body = io.NopCloser(bytes.NewReader(buf))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(buf)), nil }
	return w.rt.RoundTrip(r)
}

// CloseIdleConnections is for http.Client.CloseIdleConnections.
func (w wholeBody) CloseIdleConnections() {
	if c, ok := w.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
