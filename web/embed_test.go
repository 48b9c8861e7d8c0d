package web

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Each page is served at "/" with its own bundle, the assets it names are
// embedded, and nothing else answers.
func TestRoutes(t *testing.T) {
	for _, page := range []string{StorePage, AllocPage} {
		mux := http.NewServeMux()
		for p, h := range Routes(page) {
			mux.Handle(p, h)
		}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		body := rec.Body.String()
		if rec.Code != 200 || !strings.Contains(body, `src="/ui/`+page+`.js"`) || !strings.Contains(rec.Header().Get("Content-Security-Policy"), "script-src 'self'") {
			t.Fatalf("%s: GET / = %d %q", page, rec.Code, rec.Header())
		}
		for _, asset := range []string{"/ui/" + page + ".js", "/ui/style.css", "/ui/client.js"} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest("GET", asset, nil))
			if rec.Code != 200 || rec.Body.Len() == 0 {
				t.Fatalf("%s: GET %s = %d", page, asset, rec.Code)
			}
		}
		for _, path := range []string{"/index.html", "/ui/"} {
			rec = httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			if rec.Code != 404 || strings.Contains(rec.Body.String(), "client.js") {
				t.Fatalf("%s: GET %s = %d %.80q, want 404 (no page, no listing)", page, path, rec.Code, rec.Body.String())
			}
		}
	}
}

// Every module a page imports (its chunk) is in the build.
func TestBundleChunksPresent(t *testing.T) {
	assets := Assets()
	for _, page := range []string{StorePage, AllocPage} {
		b, err := fs.ReadFile(assets, "ui/"+page+".js")
		if err != nil {
			t.Fatal(err)
		}
		for _, part := range strings.Split(string(b), `"./`)[1:] {
			name := part[:strings.IndexByte(part, '"')]
			if _, err := fs.Stat(assets, "ui/"+name); err != nil {
				t.Errorf("%s.js imports %s: %v", page, name, err)
			}
		}
	}
}

func TestUnknownPagePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Routes accepted an unknown page")
		}
	}()
	Routes("nope")
}
