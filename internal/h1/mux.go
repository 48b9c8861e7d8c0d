package h1

import "strings"

// Mux routes by path: an exact path, or a prefix for patterns ending in
// "/". It declines what no route takes.
type Mux struct {
	exact    map[string]Handler
	prefixes []prefixRoute
}

type prefixRoute struct {
	prefix string
	h      Handler
}

// Handle routes pattern to h; a pattern ending in "/" is a prefix.
func (m *Mux) Handle(pattern string, h Handler) {
	if strings.HasSuffix(pattern, "/") {
		m.prefixes = append(m.prefixes, prefixRoute{pattern, h})
		return
	}
	if m.exact == nil {
		m.exact = map[string]Handler{}
	}
	m.exact[pattern] = h
}

// ServeH1 hands req to its route, if any.
func (m *Mux) ServeH1(req *Request, resp *Response) bool {
	if h, ok := m.exact[string(req.Path)]; ok {
		return h.ServeH1(req, resp)
	}
	for _, p := range m.prefixes {
		if len(req.Path) > len(p.prefix) && string(req.Path[:len(p.prefix)]) == p.prefix {
			return p.h.ServeH1(req, resp)
		}
	}
	return false
}
