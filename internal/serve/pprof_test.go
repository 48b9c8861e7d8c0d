package serve

import (
	"net/http"
	"testing"
)

func TestPprofIsOptIn(t *testing.T) {
	off := startTest(t, Options{})
	if code, _, _ := get(t, http.DefaultClient, off+"/debug/pprof/cmdline"); code != http.StatusNotFound {
		t.Fatalf("pprof without --pprof: status %d, want 404", code)
	}
	on := startTest(t, Options{Pprof: true})
	if code, _, _ := get(t, http.DefaultClient, on+"/debug/pprof/cmdline"); code != http.StatusOK {
		t.Fatalf("pprof with --pprof: status %d, want 200", code)
	}
	if code, body, _ := get(t, http.DefaultClient, on+"/debug/pprof/"); code != http.StatusOK || len(body) == 0 {
		t.Fatalf("pprof index: status %d", code)
	}
}
