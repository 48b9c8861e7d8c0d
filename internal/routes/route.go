package routes

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/seqsvr/seqsvr/internal/h1"
)

// Route is one plain HTTP route (a Leaf API GET) as a process serves it.
type Route struct {
	// Pattern is the http.ServeMux pattern, "GET /api/segment/get/{tag}":
	// a method, then a path whose wildcards are whole trailing segments.
	Pattern string
	// Handler serves the route through net/http.
	Handler http.Handler
	// Fast, when set, answers the route on the front. rest is the path
	// after the pattern's literal prefix: the wildcards' values joined by
	// "/", each one segment of unreserved characters (see the package
	// guarantees). Like any h1.Handler it either answers or returns false
	// having done nothing.
	Fast func(req *h1.Request, rest []byte, resp *h1.Response) bool
	// Gated, when set, puts the route's serving path under the coverage
	// gate of the fault harness (Table.Gated): the named functions every
	// call of it runs through (functions or method values, not closures).
	// Its role is the Leaf API's (auth.LeafRole), from its path.
	Gated []any
}

// FrontPattern is the h1.Mux pattern the route's Fast is mounted at: the
// literal prefix of its path, or its whole path without wildcards.
func (r Route) FrontPattern() string {
	p, _ := r.front()
	return p
}

// front is the route's h1 pattern (its literal prefix, or its whole path
// without wildcards) and its front handler.
func (r Route) front() (string, h1.Handler) {
	method, path, ok := strings.Cut(r.Pattern, " ")
	if !ok || !strings.HasPrefix(path, "/") {
		panic(fmt.Sprintf("routes: pattern %q has no method", r.Pattern))
	}
	prefix, wild, _ := strings.Cut(path, "{")
	if wild == "" {
		return path, h1.HandlerFunc(func(req *h1.Request, resp *h1.Response) bool {
			return string(req.Method) == method && len(req.Body) == 0 && r.Fast(req, nil, resp)
		})
	}
	n := strings.Count(path, "{")
	if !strings.HasSuffix(prefix, "/") || strings.Count(path[len(prefix):], "/") != n-1 || !strings.HasSuffix(path, "}") {
		panic(fmt.Sprintf("routes: pattern %q: wildcards must be whole trailing segments", r.Pattern))
	}
	return prefix, h1.HandlerFunc(func(req *h1.Request, resp *h1.Response) bool {
		// A GET with a body gets net/http's body bound; anything else in
		// the path is net/http's mux's to decode, clean or refuse.
		if string(req.Method) != method || len(req.Body) != 0 {
			return false
		}
		rest := req.Path[len(prefix):]
		if !segments(rest, n) {
			return false
		}
		return r.Fast(req, rest, resp)
	})
}

// segments reports whether b is n path segments joined by "/", each of RFC
// 3986 unreserved characters and none "." or "..".
func segments(b []byte, n int) bool {
	start := 0
	for i := 0; i <= len(b); i++ {
		if i < len(b) && b[i] != '/' {
			continue
		}
		if n == 0 || !unreserved(b[start:i]) {
			return false
		}
		n, start = n-1, i+1
	}
	return n == 0
}

func unreserved(b []byte) bool {
	if len(b) == 0 || string(b) == "." || string(b) == ".." {
		return false
	}
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-', c == '.', c == '_', c == '~':
		default:
			return false
		}
	}
	return true
}
