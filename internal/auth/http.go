package auth

import (
	"errors"
	"net/http"
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

// IsLeaf reports whether path is under LeafPrefix (the Leaf API's).
func IsLeaf[T string | []byte](path T) bool {
	return len(path) >= len(LeafPrefix) && string(path[:len(LeafPrefix)]) == LeafPrefix
}

// PathRole is the role a request needs, judged from its path alone, the
// one such rule for net/http's header gate and the HTTP/1.1 front, so a
// server refuses a call before reading any of its body. guarded is false
// for paths no token guards (/healthz, /metrics, the status page, ...),
// which their handlers answer. The Leaf API needs LeafRole; a procedure
// of rs its role; any other path shaped as a procedure
// ("/pkg.Service/Method", unknown ones included) needs a valid token of
// any role, and its handler then answers it (unimplemented, not found),
// so a call that names no procedure is refused to an unknown caller too.
// It takes the front's bytes as they are and allocates nothing.
func PathRole[T string | []byte](rs Roles, path T) (need Role, guarded bool) {
	if IsLeaf(path) {
		return LeafRole, true
	}
	if r, ok := rs[string(path)]; ok {
		return r, true
	}
	if procedureShaped(path) {
		return Metrics, true
	}
	return Open, false
}

// procedureShaped reports a path of two non-empty segments whose first
// holds a dot, as connect-go's and gRPC's "/pkg.Service/Method" do.
func procedureShaped[T string | []byte](path T) bool {
	if len(path) < 2 || path[0] != '/' {
		return false
	}
	slash, dot := -1, false
	for i := 1; i < len(path); i++ {
		switch path[i] {
		case '/':
			if slash >= 0 {
				return false // a third segment
			}
			slash = i
		case '.':
			dot = dot || slash < 0
		}
	}
	return slash > 1 && slash < len(path)-1 && dot
}
