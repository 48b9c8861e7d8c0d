package h1

import (
	"context"
	"net/http"
	"slices"
)

// Handler serves requests the front parsed. ServeH1 either fills resp and
// returns true, or returns false having done nothing, and the request (and
// the rest of its connection) goes to net/http.
type Handler interface {
	ServeH1(req *Request, resp *Response) bool
}

// HandlerFunc adapts a function to Handler.
type HandlerFunc func(req *Request, resp *Response) bool

// ServeH1 calls f.
func (f HandlerFunc) ServeH1(req *Request, resp *Response) bool { return f(req, resp) }

// Request is one complete HTTP/1.1 request. Its byte slices point into the
// connection's read buffer and are valid only during ServeH1.
type Request struct {
	Method []byte
	Path   []byte // origin-form, no query
	Body   []byte
	// Close is set when the client asked for Connection: close.
	Close bool
	// Context is cancelled when the server is closed hard; there is no
	// per-request cancellation on client hang-up (that is what costs
	// net/http a goroutine per request).
	Context context.Context
	// Memo is the connection's, not the request's: it keeps what a handler
	// put there from one request to the next on the same connection, no
	// other connection ever sees it, and it is nil on a new connection.
	// A handler may remember there what it worked out from an earlier
	// request, such as a credential it accepted (auth.Memo).
	Memo any

	fields []field
	size   int // bytes of the request in the buffer, head and body
	head   int // bytes of the head once it is whole, else 0
}

type field struct{ name, value []byte }

// Header returns the first value of the header name (case-insensitive),
// with surrounding whitespace trimmed, and how many times it occurs.
func (r *Request) Header(name string) (value []byte, n int) {
	for _, f := range r.fields {
		if equalFold(f.name, name) {
			if n == 0 {
				value = f.value
			}
			n++
		}
	}
	return value, n
}

// Response is what a Handler answers. The zero value is 200 with no body.
type Response struct {
	Status int // 0 means 200
	Body   []byte
	// Buf is scratch owned by the connection, empty at each request; a
	// handler may build Body by appending to it so steady state allocates
	// nothing.
	Buf []byte
	// Code is what the answer means to the route's protocol, for metrics
	// (the Connect code name for an RPC: "ok", "not_found"...), so nothing
	// downstream parses a body to learn it. The front itself ignores it.
	Code string

	header []hfield
	rw     *responseWriter
}

type hfield struct{ name, value string }

// SetHeader adds a response header. Content-Length, Date and Connection are
// the front's own.
func (r *Response) SetHeader(name, value string) {
	r.header = append(r.header, hfield{name, value})
}

// Writer returns an http.ResponseWriter that writes into r, for the rare
// answers (errors) built by code written for net/http, such as
// connect.ErrorWriter. It allocates; keep it off the hot path.
func (r *Response) Writer() http.ResponseWriter {
	if r.rw == nil {
		r.rw = &responseWriter{resp: r, h: http.Header{}}
	}
	return r.rw
}

func (r *Response) reset(buf []byte) {
	r.Status, r.Body, r.Buf, r.Code = 0, nil, buf[:0], ""
	r.header = r.header[:0]
	r.rw = nil
}

// headers lists the answer's headers, those set through Writer included,
// in a stable order.
func (r *Response) headers() []hfield {
	if r.rw == nil {
		return r.header
	}
	keys := make([]string, 0, len(r.rw.h))
	for k := range r.rw.h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range r.rw.h[k] {
			r.header = append(r.header, hfield{k, v})
		}
	}
	return r.header
}

type responseWriter struct {
	resp        *Response
	h           http.Header
	wroteHeader bool
}

func (w *responseWriter) Header() http.Header { return w.h }

func (w *responseWriter) WriteHeader(status int) {
	if !w.wroteHeader {
		w.wroteHeader = true
		w.resp.Status = status
	}
}

func (w *responseWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.resp.Body = append(w.resp.Body, b...)
	return len(b), nil
}

func equalFold[T string | []byte](b T, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := 0; i < len(b); i++ {
		if lower(b[i]) != lower(s[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
