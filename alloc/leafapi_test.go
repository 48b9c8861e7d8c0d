package alloc

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/seqsvr/seqsvr/internal/errs"
)

func leafGet(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func TestLeafSegmentPlainNumber(t *testing.T) {
	_, _, _, srv := newTestService(t)
	for want := int64(1); want <= 3; want++ {
		code, body := leafGet(t, srv.URL+"/api/segment/get/order")
		if code != 200 {
			t.Fatalf("status %d body %q", code, body)
		}
		got, err := strconv.ParseInt(body, 10, 64)
		if err != nil || got != want {
			t.Fatalf("body %q, want plain %d", body, want)
		}
	}
}

func TestLeafErrorsStatusAndOneLine(t *testing.T) {
	svc, seg, _, srv := newTestService(t)
	check := func(path string, want int) {
		t.Helper()
		code, body := leafGet(t, srv.URL+path)
		if code != want {
			t.Fatalf("%s: status %d body %q, want %d", path, code, body, want)
		}
		if strings.Count(strings.TrimSuffix(body, "\n"), "\n") != 0 || strings.TrimSpace(body) == "" {
			t.Fatalf("%s: body not one line: %q", path, body)
		}
		if _, err := strconv.ParseInt(strings.TrimSpace(body), 10, 64); err == nil {
			t.Fatalf("%s: error body parses as an ID: %q", path, body)
		}
	}
	check("/api/segment/get/bad%20tag", http.StatusBadRequest)
	if seg.callCount() != 0 {
		t.Fatal("allocator called for a malformed tag")
	}
	seg.err = fmt.Errorf("%w: tag nope", errs.NotFound)
	check("/api/segment/get/nope", http.StatusNotFound)
	seg.err = fmt.Errorf("%w: store down\nsecond line", errs.Unavailable)
	check("/api/segment/get/order", http.StatusServiceUnavailable)

	check("/api/snowflake/get/order", http.StatusServiceUnavailable)
	sf := &svcFakeSnowflake{}
	svc.SetSnowflake(sf)
	code, body := leafGet(t, srv.URL+"/api/snowflake/get/order")
	if id, err := strconv.ParseInt(body, 10, 64); code != 200 || err != nil || id <= 0 {
		t.Fatalf("snowflake: %d %q", code, body)
	}
	check("/api/snowflake/get/bad%20tag", http.StatusBadRequest)
	sf.err = fmt.Errorf("%w: lease lost", errs.FailedPrecondition)
	check("/api/snowflake/get/order", http.StatusPreconditionFailed)
}

func TestLeafOnlyGetHandsOutIDs(t *testing.T) {
	_, seg, _, srv := newTestService(t)
	for _, path := range []string{"/api/segment/get/order", "/api/snowflake/get/order", "/api/seq/next/inbox/1", "/api/seq/current/inbox/1"} {
		for _, method := range []string{http.MethodHead, http.MethodPost, http.MethodPut, http.MethodDelete} {
			req, err := http.NewRequest(method, srv.URL+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != http.MethodGet {
				t.Errorf("%s %s: status %d Allow %q, want 405 allowing GET only", method, path, res.StatusCode, res.Header.Get("Allow"))
			}
		}
	}
	if n := seg.callCount(); n != 0 {
		t.Fatalf("%d segment calls made by requests that are not GET", n)
	}
	if code, body := leafGet(t, srv.URL+"/api/segment/get/order"); code != http.StatusOK || body != "1" {
		t.Fatalf("GET after the refused methods: %d %q, want the first ID", code, body)
	}
}
