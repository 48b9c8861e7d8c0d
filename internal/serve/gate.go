package serve

import (
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/rpcmetrics"
)

// gate checks the token of every guarded request (auth.PathRole) on its
// headers, before its handler runs, so connect-go never reads the body
// of a call it would refuse: a refusal is answered at once, in the
// caller's protocol (Connect unary as JSON, Connect streaming, gRPC and
// gRPC-web as connect-go writes them; the Leaf API as one line), and on
// HTTP/1.1 with Connection: close, the connection closed without reading
// what is left of the body. The Connect interceptor and the Leaf wrapper
// (auth.Leaf, on every Options.Routes path, known to the gate or not)
// still check behind it. Checking here first also puts the auth answer
// before the size answer for a caller without a token. A nil Authorizer
// (no --auth-file) installs no gate. A refused RPC is counted in m (per
// procedure, protocol and code) as the interceptor would have counted it.
func gate(a *auth.Authorizer, m *rpcmetrics.Metrics, next http.Handler) http.Handler {
	if a == nil {
		return next
	}
	ew := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		need, guarded := auth.PathRole(a.Roles(), r.URL.Path)
		if !guarded || r.Method == http.MethodOptions {
			next.ServeHTTP(w, r) // CORS preflights carry no token
			return
		}
		if _, err := a.CheckRole(r.Header.Get("Authorization"), need, r.URL.Path); err != nil {
			auth.CloseAfterRefusal(w, r)
			if auth.IsLeaf(r.URL.Path) {
				auth.WriteLeafRefusal(w, err)
				return
			}
			ce := errs.Connect(err)
			if m != nil {
				m.Observe(r.URL.Path, protocol(r), connect.CodeOf(ce).String(), 0)
			}
			_ = ew.Write(w, r, ce)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// protocol names a call's protocol as connect-go's Peer.Protocol does,
// from its Content-Type.
func protocol(r *http.Request) string {
	ct := r.Header.Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/grpc-web"):
		return connect.ProtocolGRPCWeb
	case strings.HasPrefix(ct, "application/grpc"):
		return connect.ProtocolGRPC
	default:
		return connect.ProtocolConnect
	}
}
