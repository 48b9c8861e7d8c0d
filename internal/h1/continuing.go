package h1

import "net/http"

// continuing returns the server for connections the front hands off after
// it has answered on them. net/http looks for HTTP/2's prior-knowledge
// preface only at the start of a connection; the server that takes fresh
// connections from the front must look (h2c clients start there), but one
// that took a connection mid-stream would let a later `PRI * HTTP/2.0`
// switch it to HTTP/2, and would hold a short remainder for up to
// ReadHeaderTimeout waiting for the preface's first 14 bytes, where net/http alone
// reads it as the next HTTP/1.1 request at once. So mid-stream hand-offs go
// to a copy of h without unencrypted HTTP/2, or to h itself when h does not
// speak it.
//
// The copy takes h's settings as they are when Serve starts, and calls h's
// Handler on each request, so a Handler set later is used too.
func continuing(h *http.Server) *http.Server {
	if h.Protocols == nil || !h.Protocols.UnencryptedHTTP2() {
		return h
	}
	p := *h.Protocols
	p.SetUnencryptedHTTP2(false)
	return &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hh := h.Handler
			if hh == nil {
				hh = http.DefaultServeMux
			}
			hh.ServeHTTP(w, r)
		}),
		DisableGeneralOptionsHandler: h.DisableGeneralOptionsHandler,
		TLSConfig:                    h.TLSConfig,
		ReadTimeout:                  h.ReadTimeout,
		ReadHeaderTimeout:            h.ReadHeaderTimeout,
		WriteTimeout:                 h.WriteTimeout,
		IdleTimeout:                  h.IdleTimeout,
		MaxHeaderBytes:               h.MaxHeaderBytes,
		ConnState:                    h.ConnState,
		ErrorLog:                     h.ErrorLog,
		BaseContext:                  h.BaseContext,
		ConnContext:                  h.ConnContext,
		HTTP2:                        h.HTTP2,
		Protocols:                    &p,
	}
}

type servedBy struct {
	srv *http.Server
	ln  *chanListener
}

// httpServers lists the net/http servers behind the front with the
// listener each serves: HTTP first, then the mid-stream one when it is
// another server.
func (s *Server) httpServers() []servedBy {
	if s.cont == s.HTTP {
		return []servedBy{{s.HTTP, s.handoff}}
	}
	return []servedBy{{s.HTTP, s.handoff}, {s.cont, s.contOff}}
}
