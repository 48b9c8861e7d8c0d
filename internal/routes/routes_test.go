package routes_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/connectfast"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/h1"
	"github.com/seqsvr/seqsvr/internal/routes"
	"github.com/seqsvr/seqsvr/internal/routes/routestest"
)

// ids is the stub's NextIDs: what it does depends on the tag.
func ids(ctx context.Context, tag string) ([]int64, error) {
	switch tag {
	case "ok":
		return []int64{1, 2, 300}, nil
	case "not found":
		return nil, fmt.Errorf("%w: tag %q", errs.NotFound, tag)
	case "quoted":
		return nil, fmt.Errorf("%w: bad \"tag\"\n", errs.InvalidArgument)
	case "plain":
		return nil, errors.New("disk on fire")
	case "panic":
		panic("boom")
	case "wait":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return nil, connect.NewError(connect.CodeUnavailable, errors.New("no leader"))
}

// stub is AllocService with NextIDs (ids) on connect-go and on the front,
// the rest unimplemented, and a route GET /r/{a}/{b} on both.
type stub struct {
	seqsvrv1connect.UnimplementedAllocServiceHandler
}

func (stub) NextIDs(ctx context.Context, req *connect.Request[seqsvrv1.NextIDsRequest]) (*connect.Response[seqsvrv1.NextIDsResponse], error) {
	out, err := ids(ctx, req.Msg.GetTag())
	if err != nil {
		return nil, errs.Connect(err)
	}
	return connect.NewResponse(&seqsvrv1.NextIDsResponse{Ids: out}), nil
}

// nextIDsFast falls through for tag "fall", having scribbled over its body
// first: net/http must get the body as it came.
func nextIDsFast(ctx context.Context, body []byte) ([]byte, error) {
	var req seqsvrv1.NextIDsRequest
	if err := connectfast.Decode(body, &req); err != nil {
		return nil, err
	}
	if req.GetTag() == "fall" {
		for i := range body {
			body[i] = 0xff
		}
		return nil, connectfast.ErrFallThrough
	}
	out, err := ids(ctx, req.GetTag())
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{}.MarshalAppend(body[:0], &seqsvrv1.NextIDsResponse{Ids: out})
}

func table(*testing.T) routes.Table {
	var s stub
	pair := func(a, b []byte) string { return "a=" + string(a) + " b=" + string(b) + "\n" }
	return routes.Table{
		Procedures: []routes.Procedure{
			routes.Unary(seqsvrv1connect.AllocServiceNextIDsProcedure, auth.Client, s.NextIDs).WithFast(nextIDsFast, "X-Decline"),
			routes.Unary(seqsvrv1connect.AllocServiceNextIDRangesProcedure, auth.Client, s.NextIDRanges),
			routes.Unary(seqsvrv1connect.AllocServiceNextSnowflakeIDsProcedure, auth.Client, s.NextSnowflakeIDs),
			routes.Unary(seqsvrv1connect.AllocServiceDecodeSnowflakeProcedure, auth.Client, s.DecodeSnowflake),
			routes.Unary(seqsvrv1connect.AllocServiceStatusProcedure, auth.Client, s.Status),
		},
		Routes: []routes.Route{{
			Pattern: "GET /r/{a}/{b}",
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/plain")
				fmt.Fprint(w, pair([]byte(r.PathValue("a")), []byte(r.PathValue("b"))))
			}),
			Fast: func(_ *h1.Request, rest []byte, resp *h1.Response) bool {
				a, b, _ := bytes.Cut(rest, []byte("/"))
				resp.SetHeader("Content-Type", "text/plain")
				resp.Body = []byte(pair(a, b))
				return true
			},
		}},
	}
}

// The front's framing against connect-go's and net/http's, on every path:
// answers, errors (mapped by errs on both), panics, deadlines, bodies that
// do not decode, and what it must decline.
func TestFrontMatchesConnect(t *testing.T) {
	call := func(name, tag string, front bool, header ...string) routestest.Case {
		b, _ := proto.Marshal(&seqsvrv1.NextIDsRequest{Tag: tag})
		return routestest.Case{Name: name, Path: seqsvrv1connect.AllocServiceNextIDsProcedure, Header: routestest.Connect(header...), Body: b, Front: front}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	b, _ := proto.Marshal(&seqsvrv1.NextIDsRequest{Tag: "ok"})
	_, _ = zw.Write(b)
	_ = zw.Close()
	big, _ := proto.Marshal(&seqsvrv1.NextIDsRequest{Tag: strings.Repeat("x", routestest.MaxBodyBytes)})
	routestest.Check(t, table, []routestest.Case{
		call("ok", "ok", true),
		call("ok without a protocol version", "ok", true, "Connect-Protocol-Version", ""),
		call("ok within a deadline", "ok", true, "Connect-Timeout-Ms", "60000"),
		call("deadline already over", "ok", true, "Connect-Timeout-Ms", "0"),
		call("deadline runs out", "wait", true, "Connect-Timeout-Ms", "20"),
		call("not found", "not found", true),
		call("quoted", "quoted", true),
		call("connect error", "other", true),
		call("plain error", "plain", true),
		call("panic", "panic", true),
		{Name: "garbage body", Path: seqsvrv1connect.AllocServiceNextIDsProcedure, Header: routestest.Connect(), Body: []byte{0xff, 0xff, 0xff}, Front: true},
		{Name: "truncated body", Path: seqsvrv1connect.AllocServiceNextIDsProcedure, Header: routestest.Connect(), Body: []byte{0x0a, 0x05, 'a'}, Front: true},
		{Name: "empty body", Path: seqsvrv1connect.AllocServiceNextIDsProcedure, Header: routestest.Connect(), Front: true},

		call("falls through", "fall", false),
		call("declined by header", "ok", false, "X-Decline", "0"),
		call("malformed timeout", "ok", false, "Connect-Timeout-Ms", "1s"),
		call("negative timeout", "ok", false, "Connect-Timeout-Ms", "-5"),
		call("protocol version 2", "ok", false, "Connect-Protocol-Version", "2"),
		{Name: "JSON", Path: seqsvrv1connect.AllocServiceNextIDsProcedure, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"tag":"ok"}`)},
		{Name: "gzip", Path: seqsvrv1connect.AllocServiceNextIDsProcedure, Header: routestest.Connect("Content-Encoding", "gzip"), Body: gz.Bytes()},
		{Name: "body over the bound", Path: seqsvrv1connect.AllocServiceNextIDsProcedure, Header: routestest.Connect(), Body: big},
		{Name: "GET of a procedure with side effects", Method: http.MethodGet, Path: seqsvrv1connect.AllocServiceNextIDsProcedure},
		{Name: "unregistered procedure", Path: "/seqsvr.v1.AllocService/Nope", Header: routestest.Connect(), Body: b},

		{Name: "route", Method: http.MethodGet, Path: "/r/x/y-._~9", Front: true},
		{Name: "route, escaped", Method: http.MethodGet, Path: "/r/x%41/y"},
		{Name: "route, dot", Method: http.MethodGet, Path: "/r/./y"},
		{Name: "route, dot dot", Method: http.MethodGet, Path: "/r/x/.."},
		{Name: "route, one segment", Method: http.MethodGet, Path: "/r/x"},
		{Name: "route, three segments", Method: http.MethodGet, Path: "/r/x/y/z"},
		{Name: "route, trailing slash", Method: http.MethodGet, Path: "/r/x/y/"},
		{Name: "route, POST", Method: http.MethodPost, Path: "/r/x/y"},
		{Name: "route, HEAD", Method: http.MethodHead, Path: "/r/x/y"},
		{Name: "route, GET with a body", Method: http.MethodGet, Path: "/r/x/y", Body: []byte("body")},
	})
}

// A procedure's connect-go handler takes the proto's idempotency level:
// Connect GET works for Status (NO_SIDE_EFFECTS) and not for NextIDs.
func TestUnaryIdempotencyFromProto(t *testing.T) {
	srv := httptest.NewServer(routestest.Mount(table(t)))
	t.Cleanup(srv.Close)
	c := seqsvrv1connect.NewAllocServiceClient(srv.Client(), srv.URL, connect.WithHTTPGet())
	_, err := c.Status(context.Background(), connect.NewRequest(&seqsvrv1.StatusRequest{}))
	if connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Fatalf("Status over GET: %v, want the handler's unimplemented", err)
	}
	res, err := http.Get(srv.URL + seqsvrv1connect.AllocServiceNextIDsProcedure + "?encoding=proto&message=")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("NextIDs over GET: %d, want 405", res.StatusCode)
	}
}

// A table that registers a procedure twice, leaves out a method of a
// service it serves, or names a procedure with the wrong types is refused
// when it is built.
func TestTableRefusesWiringMistakes(t *testing.T) {
	full := table(t)
	for name, build := range map[string]func(){
		"twice": func() {
			routes.Table{Procedures: append(full.Procedures, full.Procedures[0])}.Services()
		},
		"missing": func() { routes.Table{Procedures: full.Procedures[1:]}.Services() },
		"wrong types": func() {
			routes.Unary(seqsvrv1connect.AllocServiceNextIDsProcedure, auth.Client, stub{}.Status)
		},
		"no descriptor": func() {
			routes.Unary("/seqsvr.v1.AllocService/Nope", auth.Client, stub{}.Status)
		},
		"open procedure": func() {
			routes.Unary(seqsvrv1connect.AllocServiceStatusProcedure, auth.Open, stub{}.Status)
		},
		"metrics procedure": func() {
			routes.Unary(seqsvrv1connect.AllocServiceStatusProcedure, auth.Metrics, stub{}.Status)
		},
		"two roles": func() {
			routes.Table{Procedures: []routes.Procedure{
				routes.Unary(seqsvrv1connect.AllocServiceStatusProcedure, auth.Client, stub{}.Status),
				routes.Unary(seqsvrv1connect.AllocServiceStatusProcedure, auth.Admin, stub{}.Status),
			}}.Roles()
		},
		"gated closure": func() {
			routes.Table{Procedures: []routes.Procedure{
				routes.Unary(seqsvrv1connect.AllocServiceStatusProcedure, auth.Client, stub{}.Status).Gated(func() {}),
			}}.Gated()
		},
		"gated non-function": func() {
			routes.Table{Routes: []routes.Route{{Pattern: "GET /r", Gated: []any{"ids"}}}}.Gated()
		},
		"route twice": func() {
			routes.Table{Routes: append(full.Routes, full.Routes[0])}.HTTP()
		},
		"wildcard mid-path": func() {
			routes.Table{Routes: []routes.Route{{Pattern: "GET /r/{a}/x", Fast: full.Routes[0].Fast}}}.Front(1, nil)
		},
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("built without a panic")
				}
			}()
			build()
		})
	}
}

// A table's roles are its procedures' as declared, and nothing else.
func TestTableRoles(t *testing.T) {
	rs := table(t).Roles()
	if len(rs) != 5 || rs[seqsvrv1connect.AllocServiceNextIDsProcedure] != auth.Client {
		t.Fatalf("Roles() = %v", rs)
	}
}

// Gated names each declared function as the coverage profile does, once,
// in declaration order: a gated procedure's handler, its front route and
// its functions; a route's functions; and the front's wildcard checks
// when a front route has wildcards.
func TestTableGated(t *testing.T) {
	var s stub
	tb := routes.Table{
		Procedures: []routes.Procedure{
			routes.Unary(seqsvrv1connect.AllocServiceNextIDsProcedure, auth.Client, s.NextIDs).WithFast(nextIDsFast).Gated(ids, ids),
			routes.Unary(seqsvrv1connect.AllocServiceStatusProcedure, auth.Client, s.Status),
			routes.Unary(seqsvrv1connect.AllocServiceNextIDRangesProcedure, auth.Client, (&s).NextIDRanges).Gated(),
		},
		Routes: []routes.Route{{Pattern: "GET /r/{a}", Fast: table(t).Routes[0].Fast, Gated: []any{routestest.Connect}}},
	}
	want := []routes.GatedFunc{
		{Pkg: "internal/routes_test", Func: "stub.NextIDs"},
		{Pkg: "internal/routes_test", Func: "nextIDsFast"},
		{Pkg: "internal/routes_test", Func: "ids"},
		// stub's NextIDRanges is the generated Unimplemented one.
		{Pkg: "gen/seqsvr/v1/seqsvrv1connect", Func: "UnimplementedAllocServiceHandler.NextIDRanges"},
		{Pkg: "internal/routes/routestest", Func: "Connect"},
		{Pkg: "internal/routes", Func: "segments"},
		{Pkg: "internal/routes", Func: "unreserved"},
	}
	if got := tb.Gated(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("Gated() =\n%v\nwant\n%v", got, want)
	}
}
