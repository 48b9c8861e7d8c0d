package serve

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/connectfast"
	"github.com/seqsvr/seqsvr/internal/routes"
	"github.com/seqsvr/seqsvr/web"
)

// allocStub answers NextIDs (tag "bad" is invalid_argument) and Status,
// recording the HTTP method Status arrived with.
type allocStub struct {
	seqsvrv1connect.UnimplementedAllocServiceHandler
	mu      sync.Mutex
	methods []string
}

// allocTable is AllocService served by stub, NextIDs on the front by fast
// (none when nil), every procedure open to role client.
func allocTable(stub *allocStub, fast connectfast.Func) routes.Table {
	return routes.Table{Procedures: []routes.Procedure{
		routes.Unary(seqsvrv1connect.AllocServiceNextIDsProcedure, auth.Client, stub.NextIDs).WithFast(fast),
		routes.Unary(seqsvrv1connect.AllocServiceNextIDRangesProcedure, auth.Client, stub.NextIDRanges),
		routes.Unary(seqsvrv1connect.AllocServiceNextSnowflakeIDsProcedure, auth.Client, stub.NextSnowflakeIDs),
		routes.Unary(seqsvrv1connect.AllocServiceDecodeSnowflakeProcedure, auth.Client, stub.DecodeSnowflake),
		routes.Unary(seqsvrv1connect.AllocServiceStatusProcedure, auth.Client, stub.Status),
	}}
}

func (s *allocStub) NextIDs(_ context.Context, req *connect.Request[seqsvrv1.NextIDsRequest]) (*connect.Response[seqsvrv1.NextIDsResponse], error) {
	if req.Msg.GetTag() == "bad" {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("bad tag"))
	}
	return connect.NewResponse(&seqsvrv1.NextIDsResponse{Ids: []int64{7}}), nil
}

func (s *allocStub) Status(_ context.Context, req *connect.Request[seqsvrv1.StatusRequest]) (*connect.Response[seqsvrv1.StatusResponse], error) {
	s.mu.Lock()
	s.methods = append(s.methods, req.HTTPMethod())
	s.mu.Unlock()
	return connect.NewResponse(&seqsvrv1.StatusResponse{NodeId: "stub"}), nil
}

// A table's procedures are mounted on both servers (App.Routes); per-RPC
// metrics count calls by procedure and code whether the front or
// connect-go answered them; a Connect GET of a NO_SIDE_EFFECTS RPC passes
// the front (which answers only POST) and reaches connect-go as a GET; the
// status page is at "/" on both paths.
func TestRunRPCMetricsAndConnectGET(t *testing.T) {
	eachFastHTTP(t, func(t *testing.T, fast bool) {
		stub := &allocStub{}
		var fastServed int
		addr := make(chan string, 1)
		ctx, cancel := context.WithCancel(context.Background())
		done := runBackground(ctx, testProcess(fast, func(_ context.Context, env Env) (*App, error) {
			addr <- env.Addr
			fast := func(ctx context.Context, body []byte) ([]byte, error) {
				fastServed++
				var req seqsvrv1.NextIDsRequest
				if err := connectfast.Decode(body, &req); err != nil {
					return nil, err
				}
				if req.GetTag() == "bad" {
					return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("bad tag"))
				}
				return []byte{0x0a, 0x01, 0x07}, nil // ids: [7]
			}
			return &App{
				Routes:  allocTable(stub, fast),
				Handler: Options{Page: web.AllocPage},
			}, nil
		}))
		defer func() {
			cancel()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
		base := "http://" + <-addr
		waitServing(t, base)
		hc := &http.Client{Transport: &http.Transport{}} // HTTP/1.1, which the front serves
		cli := seqsvrv1connect.NewAllocServiceClient(hc, base, connect.WithProtoJSON(), connect.WithHTTPGet())
		bin := seqsvrv1connect.NewAllocServiceClient(hc, base)
		for range 3 {
			res, err := bin.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "t"}))
			if err != nil || len(res.Msg.GetIds()) != 1 || res.Msg.GetIds()[0] != 7 {
				t.Fatalf("NextIDs: %v %v", res, err)
			}
			// The CORS wrapper's Vary, on the front's answers too.
			if v := res.Header().Values("Vary"); len(v) != 1 || v[0] != "Origin" {
				t.Fatalf("NextIDs answered Vary %q, want Origin as net/http's CORS wrapper sends it", v)
			}
		}
		if _, err := bin.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "bad"})); connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Fatalf("NextIDs bad: %v, want invalid_argument", err)
		}
		if res, err := cli.Status(ctx, connect.NewRequest(&seqsvrv1.StatusRequest{})); err != nil || res.Msg.GetNodeId() != "stub" {
			t.Fatalf("Status over Connect GET: %v %v", res, err)
		}
		if got := stub.methods; len(got) != 1 || got[0] != http.MethodGet {
			t.Fatalf("Status arrived as %q, want one GET", got)
		}
		if want := map[bool]int{true: 4, false: 0}[fast]; fastServed != want {
			t.Fatalf("front served %d NextIDs, want %d", fastServed, want)
		}
		_, metrics, _ := get(t, http.DefaultClient, base+"/metrics")
		for _, want := range []string{
			`rpc_server_handled_total{rpc_code="ok",rpc_method="NextIDs",rpc_protocol="connect",rpc_service="seqsvr.v1.AllocService"} 3`,
			`rpc_server_handled_total{rpc_code="invalid_argument",rpc_method="NextIDs",rpc_protocol="connect",rpc_service="seqsvr.v1.AllocService"} 1`,
			`rpc_server_handled_total{rpc_code="ok",rpc_method="Status",rpc_protocol="connect",rpc_service="seqsvr.v1.AllocService"} 1`,
			`rpc_server_duration_seconds_count{rpc_code="ok",rpc_method="NextIDs",rpc_service="seqsvr.v1.AllocService"} 3`,
		} {
			if !strings.Contains(metrics, want+"\n") {
				t.Errorf("/metrics lacks %s", want)
			}
		}
		code, page, res := get(t, hc, base+"/")
		if code != 200 || !strings.Contains(page, `src="/ui/alloc.js"`) || res.Header.Get("Content-Security-Policy") == "" {
			t.Fatalf("GET /: %d %.80q csp %q", code, page, res.Header.Get("Content-Security-Policy"))
		}
		if code, _, _ := get(t, hc, base+"/ui/style.css"); code != 200 {
			t.Fatalf("GET /ui/style.css: %d", code)
		}
		if code, _, _ := get(t, hc, base+"/no-such-page"); code != 404 {
			t.Fatalf("GET /no-such-page: %d, want 404", code)
		}
	})
}
