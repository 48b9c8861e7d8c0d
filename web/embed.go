// Package web serves the status pages that both binaries show at "/".
// The pages are built from web/src (TypeScript, connect-web) into dist/,
// which is committed and embedded here, so building the Go code never
// needs Node; `make web` rebuilds dist/ and `make check-generate` fails
// when the committed build is stale.
//
// Guarantees:
//   - The pages and their assets are served without a token: they hold no
//     data. Everything they show comes from the process's public RPCs,
//     which the page calls with the token the user typed (kept in the
//     tab's session storage), so auth applies exactly as to any client.
//   - A Content-Security-Policy keeps the page to its own scripts and
//     styles (no inline code, nothing loaded from elsewhere); it may call
//     other seqsvr processes (the store page asks every member for its own
//     view).
package web

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed dist
var dist embed.FS

// Pages are the status pages there are, by the binary that serves them.
const (
	StorePage = "store"
	AllocPage = "alloc"
)

// csp lets the page run its own bundle and call seqsvr processes (its
// own origin, and the other store members over http or https).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self' http: https:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// Assets is the build output: "store.html", "alloc.html", "ui/...".
func Assets() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // the embedded tree always has dist/
	}
	return sub
}

// Routes are the mux patterns serving page at "/" and the shared assets
// under "/ui/". Only "/" itself is the page: other unknown paths stay 404,
// and so does a directory ("/ui/"), never listed.
func Routes(page string) map[string]http.Handler {
	assets := Assets()
	index, err := fs.ReadFile(assets, page+".html")
	if err != nil {
		panic("web: no page " + page) // a programming error, caught by the tests
	}
	files := http.FileServerFS(noListing{assets})
	return map[string]http.Handler{
		"GET /{$}": headers(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			_, _ = w.Write(index)
		})),
		"GET /ui/": headers(files),
	}
}

func headers(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", csp)
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		// The build is embedded: a new binary may bring new assets under
		// the same names, so browsers revalidate instead of caching.
		w.Header().Set("Cache-Control", "no-cache")
		h.ServeHTTP(w, r)
	})
}
