package auth

import (
	"errors"
	"net/http"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// Leaf wraps a Leaf API handler: a refused call gets 401 or 403 with the
// error as one line of text, as the Leaf API answers every error. A nil
// Authorizer returns h unchanged.
func (a *Authorizer) Leaf(h http.Handler) http.Handler {
	if a == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := a.CheckRole(r.Header.Get("Authorization"), LeafRole, "the Leaf API"); err != nil {
			w.Header().Set("Cache-Control", "no-store")
			if errors.Is(err, errs.Unauthenticated) {
				w.Header().Set("WWW-Authenticate", "Bearer")
			}
			http.Error(w, errs.Message(err), errs.HTTPStatus(err))
			return
		}
		h.ServeHTTP(w, r)
	})
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
