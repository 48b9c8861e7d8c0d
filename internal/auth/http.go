package auth

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// Leaf wraps a Leaf API handler: a refused call gets 401 or 403 with the
// error as one line of text, as the Leaf API answers every error, at
// once and as the connection's last answer (CloseAfterRefusal); h, and
// so any reading of the body, runs only for an allowed call. A nil
// Authorizer returns h unchanged.
func (a *Authorizer) Leaf(h http.Handler) http.Handler {
	if a == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := a.CheckRole(r.Header.Get("Authorization"), LeafRole, "the Leaf API"); err != nil {
			CloseAfterRefusal(w, r)
			WriteLeafRefusal(w, err)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// CloseAfterRefusal makes the answer to a refused request the
// connection's last on HTTP/1.x (Connection: close), and stops reading the
// request: net/http would otherwise read up to 256 KiB of an unread body
// after the handler to keep the connection, and wait for it as long as
// the client liked. On HTTP/2 the stream is reset as the handler returns
// and the connection serves on. Call it before writing the answer.
func CloseAfterRefusal(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		w.Header().Set("Connection", "close")
	}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// WriteLeafRefusal answers a refusal (a CheckRole error) as the Leaf API
// answers every error: 401 or 403 and the reason on one line.
func WriteLeafRefusal(w http.ResponseWriter, err error) {
	w.Header().Set("Cache-Control", "no-store")
	if errors.Is(err, errs.Unauthenticated) {
		w.Header().Set("WWW-Authenticate", "Bearer")
	}
	http.Error(w, errs.Message(err), errs.HTTPStatus(err))
}

// PathRole is the role a request path needs on the HTTP/1.1 front: a
// Connect procedure's (Required), LeafRole for the Leaf API, and for
// anything else a role no token holds, so the front declines it and
// net/http's checks answer. It takes the front's bytes as they are and
// allocates nothing.
func PathRole[T string | []byte](path T) Role {
	const leaf = "/api/"
	if len(path) >= len(leaf) && string(path[:len(leaf)]) == leaf {
		return LeafRole
	}
	if r, ok := Procedures[string(path)]; ok {
		return r
	}
	return noRole
}

// GateRole is the role a request needs, judged from its path alone so a
// server can refuse it before reading any of its body; guarded is false
// for paths no token guards (/healthz, /metrics, the status page, ...),
// which their handlers answer. The Leaf API needs LeafRole; a procedure
// of Procedures its role; any other path shaped as a procedure
// ("/pkg.Service/Method", unknown ones included) needs a valid token of
// any role, and its handler then answers it (unimplemented, not found),
// so a call that names no procedure is refused to an unknown caller too.
func GateRole(path string) (need Role, guarded bool) {
	switch r := PathRole(path); {
	case r != noRole:
		return r, true
	case procedureShaped(path):
		return Metrics, true
	}
	return Open, false
}

// procedureShaped reports a path of two non-empty segments whose first
// holds a dot, as connect-go's and gRPC's "/pkg.Service/Method" do.
func procedureShaped(path string) bool {
	if len(path) < 2 || path[0] != '/' {
		return false
	}
	svc, method, ok := strings.Cut(path[1:], "/")
	return ok && svc != "" && method != "" && strings.Contains(svc, ".") && !strings.Contains(method, "/")
}
