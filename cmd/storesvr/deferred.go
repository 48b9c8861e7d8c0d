package main

import (
	"net/http"
	"sync/atomic"
)

// deferredHandler answers 503 until the real handler is set: the port is
// bound before the store opens, and a caller in that window gets a
// retryable answer rather than a refused connection or a nil handler.
type deferredHandler struct{ h atomic.Pointer[http.Handler] }

func (d *deferredHandler) set(h http.Handler) { d.h.Store(&h) }

func (d *deferredHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := d.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	if r.URL.Path == "/healthz" {
		_, _ = w.Write([]byte("ok\n"))
		return
	}
	http.Error(w, "starting", http.StatusServiceUnavailable)
}
