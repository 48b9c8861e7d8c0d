package tlsconf

import (
	"crypto/tls"
	"net/http"
	"sync"
)

// Transport is an http.RoundTripper of base's kind whose TLS client
// configuration follows cfg's CA file (see Client): when the file has
// changed, new connections are made by a copy of base with the new pool
// and the old copy's idle connections are closed; requests in flight on
// them finish. cfg nil or without a CA file: base with cfg, as is.
func Transport(base *http.Transport, cfg *tls.Config) http.RoundTripper {
	first := base.Clone()
	first.TLSClientConfig = Current(cfg)
	if cfg == nil || cfg.GetConfigForClient == nil {
		return first
	}
	return &reloadingTransport{base: base.Clone(), cfg: cfg, tr: first, used: first.TLSClientConfig}
}

type reloadingTransport struct {
	base *http.Transport
	cfg  *tls.Config

	mu   sync.Mutex
	tr   *http.Transport
	used *tls.Config
}

func (r *reloadingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return r.current().RoundTrip(req)
}

// current is the transport for the next request. Current is read under
// mu: read before it, a request that saw the old pool could take the lock
// after one that saw the new pool and swap the old pool back in, closing
// the new transport's idle connections on the way.
func (r *reloadingTransport) current() *http.Transport {
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := Current(r.cfg)
	if cur == r.used {
		return r.tr
	}
	old := r.tr
	r.tr = r.base.Clone()
	r.tr.TLSClientConfig, r.used = cur, cur
	old.CloseIdleConnections()
	return r.tr
}

// CloseIdleConnections is for http.Client.CloseIdleConnections.
func (r *reloadingTransport) CloseIdleConnections() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tr.CloseIdleConnections()
}
