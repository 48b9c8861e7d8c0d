package serve

import (
	"net/http"
	"time"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// gate checks the token of every guarded request (auth.GateRole) on its
// headers, before its handler runs, so connect-go never reads the body
// of a call it would refuse: a refusal is answered at once, in the
// caller's protocol (Connect unary as JSON, Connect streaming, gRPC and
// gRPC-web as connect-go writes them; the Leaf API as one line), and on
// HTTP/1.1 with Connection: close, the connection closed without reading
// what is left of the body. The Connect interceptor and the Leaf wrapper
// still check behind it: they are what answers when the gate is not
// installed (a nil Authorizer installs none). Checking here first also
// puts the auth answer before the size answer for a caller without a
// token.
func gate(a *auth.Authorizer, next http.Handler) http.Handler {
	if a == nil {
		return next
	}
	ew := connect.NewErrorWriter()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		need, guarded := auth.GateRole(r.URL.Path)
		if !guarded || r.Method == http.MethodOptions {
			next.ServeHTTP(w, r) // CORS preflights carry no token
			return
		}
		if _, err := a.CheckRole(r.Header.Get("Authorization"), need, r.URL.Path); err != nil {
			refuse(w, r)
			if isLeaf(r.URL.Path) {
				auth.WriteLeafRefusal(w, err)
				return
			}
			_ = ew.Write(w, r, errs.Connect(err))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// leafGate guards a plain HTTP route (Options.Routes, the Leaf API) as
// gate does, whatever its path: the token before the size, a refusal
// answered at once as one line (auth.WriteLeafRefusal) and the
// connection closed.
func leafGate(a *auth.Authorizer, next http.Handler) http.Handler {
	if a == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := a.CheckRole(r.Header.Get("Authorization"), auth.LeafRole, "the Leaf API"); err != nil {
			refuse(w, r)
			auth.WriteLeafRefusal(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuse makes the answer the connection's last on HTTP/1.x, and stops
// reading the request: net/http would otherwise read up to 256 KiB of
// the body after the handler to keep the connection, and wait for it as
// long as the client liked. On HTTP/2 the stream is reset as the handler
// returns; the connection serves on.
func refuse(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

func isLeaf(path string) bool { return len(path) >= 5 && path[:5] == "/api/" }
