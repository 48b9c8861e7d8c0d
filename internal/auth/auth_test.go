package auth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// Required is a procedure's role in force, and for any other one a role
// no token holds. (Each procedure's role is declared with its handler;
// jepsen/cmd/covergate checks every served RPC against the contract.)
func TestRequired(t *testing.T) {
	for p, want := range map[string]Role{
		"/seqsvr.v1.StoreService/GetTag":         Client,
		"/seqsvr.v1.StoreService/ReserveSegment": Alloc,
		"/seqsvr.v1.StoreService/DeleteTag":      Admin,
		"/grpc.health.v1.Health/Check":           Open,
		"/seqsvr.v1.StoreService/NoSuchMethod":   noRole,
	} {
		if got := testRoles.Required(p); got != want {
			t.Errorf("Required(%s) = %v, want %v", p, got, want)
		}
	}
	if got := Roles(nil).Required("/seqsvr.v1.StoreService/GetTag"); got != noRole {
		t.Errorf("with no roles in force: %v", got)
	}
	a, _ := newAuth(t)
	if _, err := a.Check("Bearer "+adminTok, "/seqsvr.v1.StoreService/GetTag"); err != nil {
		t.Fatal(err)
	}
	a.SetRoles(nil)
	if _, err := a.Check("Bearer "+adminTok, "/seqsvr.v1.StoreService/GetTag"); !errors.Is(err, errs.PermissionDenied) {
		t.Fatalf("with no roles in force: %v", err)
	}
}

const (
	clientTok = "client-token-0123456789"
	allocTok  = "alloc-token-0123456789"
	adminTok  = "admin-token-0123456789"
)

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func newAuth(t *testing.T) (*Authorizer, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "auth.json")
	writeFile(t, path, `[
 {"name": "app", "token": "`+clientTok+`", "roles": ["client"]},
 {"name": "allocsvr", "token": "`+allocTok+`", "roles": ["alloc"]},
 {"name": "ops", "token": "`+adminTok+`", "roles": ["client", "admin"]}]`)
	a, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	a.SetRoles(testRoles)
	return a, path
}

// checkCases are header values and procedures with the refusal each
// gets (nil: allowed) from newAuth's list.
var checkCases = []struct {
	header, proc string
	want         *errs.Kind
}{
	{"", "/seqsvr.v1.AllocService/NextIDs", errs.Unauthenticated},
	{"Bearer", "/seqsvr.v1.AllocService/NextIDs", errs.Unauthenticated},
	{"Basic " + clientTok, "/seqsvr.v1.AllocService/NextIDs", errs.Unauthenticated},
	{"Bearer " + clientTok + "x", "/seqsvr.v1.AllocService/NextIDs", errs.Unauthenticated},
	{"Bearer " + clientTok[:len(clientTok)-1], "/seqsvr.v1.AllocService/NextIDs", errs.Unauthenticated},
	{"Bearer " + clientTok, "/seqsvr.v1.AllocService/NextIDs", nil},
	{"bearer " + clientTok, "/seqsvr.v1.StoreService/GetTag", nil},
	{"Bearer " + clientTok, "/seqsvr.v1.StoreService/ReserveSegment", errs.PermissionDenied},
	{"Bearer " + allocTok, "/seqsvr.v1.StoreService/ReserveSegment", nil},
	{"Bearer " + allocTok, "/seqsvr.v1.AllocService/NextIDs", nil},
	{"Bearer " + allocTok, "/seqsvr.v1.StoreService/DeleteTag", errs.PermissionDenied},
	{"Bearer " + adminTok, "/seqsvr.v1.StoreService/DeleteTag", nil},
	{"Bearer " + adminTok, "/seqsvr.v1.StoreService/NoSuchMethod", errs.PermissionDenied},
	{"", "/grpc.health.v1.Health/Check", nil},
	{"Bearer \t" + clientTok + " ", "/seqsvr.v1.AllocService/NextIDs", nil},
	{"Bearer " + clientTok + "\u00a0", "/seqsvr.v1.AllocService/NextIDs", errs.Unauthenticated},
	{"Bearer  ", "/seqsvr.v1.AllocService/NextIDs", errs.Unauthenticated},
	{"Bearer " + adminTok, "/api/segment/get/t", errs.PermissionDenied}, // not a procedure
}

func TestCheck(t *testing.T) {
	a, _ := newAuth(t)
	for _, c := range checkCases {
		_, err := a.Check(c.header, c.proc)
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("Check(%q, %s) = %v, want %v", c.header, c.proc, err, c.want)
		}
	}
	var none *Authorizer
	if _, err := none.Check("", "/seqsvr.v1.StoreService/DeleteTag"); err != nil {
		t.Errorf("nil Authorizer refused: %v", err)
	}
}

func TestLoadRejects(t *testing.T) {
	for name, body := range map[string]string{
		"not json":     `[{`,
		"empty":        `[]`,
		"no name":      `[{"token": "` + clientTok + `", "roles": ["client"]}]`,
		"short token":  `[{"name": "a", "token": "short", "roles": ["client"]}]`,
		"no roles":     `[{"name": "a", "token": "` + clientTok + `", "roles": []}]`,
		"bad role":     `[{"name": "a", "token": "` + clientTok + `", "roles": ["root"]}]`,
		"unknown key":  `[{"name": "a", "token": "` + clientTok + `", "roles": ["client"], "role": "x"}]`,
		"dup name":     `[{"name": "a", "token": "` + clientTok + `", "roles": ["client"]}, {"name": "a", "token": "` + adminTok + `", "roles": ["admin"]}]`,
		"dup token":    `[{"name": "a", "token": "` + clientTok + `", "roles": ["client"]}, {"name": "b", "token": "` + clientTok + `", "roles": ["admin"]}]`,
		"space in tok": `[{"name": "a", "token": "abc def ghi jkl mno", "roles": ["client"]}]`,
	} {
		if _, err := parse([]byte(body)); err == nil {
			t.Errorf("%s: loaded", name)
		}
	}
}

func TestReloadKeepsOldOnError(t *testing.T) {
	a, path := newAuth(t)
	writeFile(t, path, `not json`)
	if err := a.Reload(); err == nil {
		t.Fatal("bad file reloaded")
	}
	if _, err := a.Check("Bearer "+adminTok, "/seqsvr.v1.StoreService/DeleteTag"); err != nil {
		t.Fatalf("old list lost: %v", err)
	}
	writeFile(t, path, `[{"name": "new", "token": "new-token-0123456789", "roles": ["admin"]}]`)
	if err := a.Reload(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Check("Bearer "+adminTok, "/seqsvr.v1.StoreService/DeleteTag"); !errors.Is(err, errs.Unauthenticated) {
		t.Fatalf("removed token still accepted: %v", err)
	}
	if _, err := a.Check("Bearer new-token-0123456789", "/seqsvr.v1.StoreService/DeleteTag"); err != nil {
		t.Fatal(err)
	}
}

// TestAllowsAgreesWithCheckRole: the front's byte check and net/http's
// string check give the same verdict on every case, with the role the
// front derives from the path.
func TestAllowsAgreesWithCheckRole(t *testing.T) {
	a, _ := newAuth(t)
	for _, c := range checkCases {
		need, guarded := PathRole(testRoles, []byte(c.proc))
		if n, g := PathRole(testRoles, c.proc); n != need || g != guarded {
			t.Errorf("PathRole(%s) differs between bytes and string", c.proc)
		}
		_, err := a.CheckRole(c.header, need, c.proc)
		if got := a.Allows([]byte(c.header), need); got != (err == nil) {
			t.Errorf("Allows(%q, %s) = %v, CheckRole: %v", c.header, c.proc, got, err)
		}
	}
	for path, want := range map[string]Role{
		"/api/segment/get/t": LeafRole, "/api/": LeafRole, "/api": Open, "/": Open, "": Open,
		"/seqsvr.v1.AllocService/NextIDs": Client, "/seqsvr.v1.StoreService/DeleteTag": Admin,
	} {
		if got, _ := PathRole(testRoles, []byte(path)); got != want {
			t.Errorf("PathRole(%q) = %v, want %v", path, got, want)
		}
	}
	var none *Authorizer
	if !none.Allows(nil, Admin) {
		t.Error("nil Authorizer refused")
	}
}

// TestAllowsAllocatesNothing: the front's check of a 64-byte token (what
// `openssl rand -hex 32` makes) on a procedure path allocates nothing.
func TestAllowsAllocatesNothing(t *testing.T) {
	tok := strings.Repeat("0123456789abcdef", 4)
	path := filepath.Join(t.TempDir(), "auth.json")
	writeFile(t, path, `[{"name": "app", "token": "`+tok+`", "roles": ["client"]}]`)
	a, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	h, p := []byte("Bearer "+tok), []byte("/seqsvr.v1.AllocService/NextIDs")
	if n := testing.AllocsPerRun(100, func() {
		if !a.Allows(h, need(p)) {
			t.Fatal("refused")
		}
	}); n != 0 {
		t.Errorf("%v allocations per check, want 0", n)
	}
}

// TestConcurrentReload runs checks while the file is swapped (for -race):
// every check sees one whole list.
func TestConcurrentReload(t *testing.T) {
	a, _ := newAuth(t)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := a.Check("Bearer "+clientTok, "/seqsvr.v1.AllocService/NextIDs"); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 50 {
		if err := a.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestLeaf(t *testing.T) {
	a, _ := newAuth(t)
	h := a.Leaf(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("1\n")) }))
	for _, c := range []struct {
		header string
		status int
	}{{"", 401}, {"Bearer nope-nope-nope-nope", 401}, {"Bearer " + clientTok, 200}, {"Bearer " + adminTok, 200}} {
		r := httptest.NewRequest("GET", "/api/segment/get/t", nil)
		if c.header != "" {
			r.Header.Set("Authorization", c.header)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.status || strings.Count(w.Body.String(), "\n") != 1 {
			t.Errorf("%q: %d %q, want %d and one line", c.header, w.Code, w.Body.String(), c.status)
		}
		if c.status == 401 && w.Header().Get("WWW-Authenticate") != "Bearer" {
			t.Errorf("401 without WWW-Authenticate")
		}
	}
}

// TestInterceptor goes through a real connect-go handler: refusals carry
// their codes, and an allowed call reaches the service.
func TestInterceptor(t *testing.T) {
	a, _ := newAuth(t)
	mux := http.NewServeMux()
	mux.Handle(seqsvrv1connect.NewStoreServiceHandler(seqsvrv1connect.UnimplementedStoreServiceHandler{}, connect.WithInterceptors(a.Interceptor())))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	for _, c := range []struct {
		token string
		want  connect.Code
	}{{"", connect.CodeUnauthenticated}, {"wrong-token-0123456789", connect.CodeUnauthenticated},
		{clientTok, connect.CodePermissionDenied}, {allocTok, connect.CodeUnimplemented}} {
		for _, opt := range []connect.ClientOption{connect.WithProtoJSON(), connect.WithGRPCWeb()} {
			cl := seqsvrv1connect.NewStoreServiceClient(srv.Client(), srv.URL, opt)
			req := connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t"})
			if c.token != "" {
				req.Header().Set("Authorization", "Bearer "+c.token)
			}
			_, err := cl.ReserveSegment(context.Background(), req)
			if got := connect.CodeOf(err); got != c.want {
				t.Errorf("token %q: %v, want %v", c.token, err, c.want)
			}
		}
	}
}

// BenchmarkAllows is the front's per-call check: a 64-byte token among
// ten, on a procedure path.
func BenchmarkAllows(b *testing.B) {
	a, h, p := tenTokens(b)
	for b.Loop() {
		if !a.Allows(h, need(p)) {
			b.Fatal("refused")
		}
	}
}

// tenTokens is an Authorizer with ten 64-byte client tokens, the header
// of the last one and a procedure path: the front's check as a deployment
// with a few applications has it.
func tenTokens(b *testing.B) (*Authorizer, []byte, []byte) {
	var es []string
	for i := range 10 {
		es = append(es, fmt.Sprintf(`{"name":"t%d","token":"%064d","roles":["client"]}`, i, i))
	}
	path := filepath.Join(b.TempDir(), "auth.json")
	if err := os.WriteFile(path, []byte("["+strings.Join(es, ",")+"]"), 0o600); err != nil {
		b.Fatal(err)
	}
	a, err := New(path)
	if err != nil {
		b.Fatal(err)
	}
	return a, []byte(fmt.Sprintf("Bearer %064d", 9)), []byte("/seqsvr.v1.AllocService/NextIDs")
}

// BenchmarkCheck is the per-call cost of the token check (a SHA-256 and a
// constant-time comparison with each of 3 tokens).
func BenchmarkCheck(b *testing.B) {
	path := filepath.Join(b.TempDir(), "auth.json")
	if err := os.WriteFile(path, []byte(`[{"name":"a","token":"`+clientTok+`","roles":["client"]},{"name":"b","token":"`+allocTok+`","roles":["alloc"]},{"name":"c","token":"`+adminTok+`","roles":["admin"]}]`), 0o600); err != nil {
		b.Fatal(err)
	}
	a, err := New(path)
	if err != nil {
		b.Fatal(err)
	}
	h := "Bearer " + clientTok
	for b.Loop() {
		if _, err := a.Check(h, "/seqsvr.v1.AllocService/NextIDs"); err != nil {
			b.Fatal(err)
		}
	}
}
