package rpcmetrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/h1"
)

func TestIsProcedure(t *testing.T) {
	for path, want := range map[string]bool{
		"/seqsvr.v1.AllocService/NextIDs": true,
		"/a.B/C":                          true,
		"/api/segment/get/t":              false,
		"/healthz":                        false,
		"/metrics":                        false,
		"/seqsvr.v1.AllocService/":        false,
		"/x/NextIDs":                      false,
		"/":                               false,
		"":                                false,
	} {
		if got := IsProcedure([]byte(path)); got != want {
			t.Errorf("IsProcedure(%q) = %v, want %v", path, got, want)
		}
	}
}

type stub struct {
	seqsvrv1connect.UnimplementedAllocServiceHandler
}

func (stub) NextIDs(_ context.Context, req *connect.Request[seqsvrv1.NextIDsRequest]) (*connect.Response[seqsvrv1.NextIDsResponse], error) {
	if req.Msg.GetTag() == "" {
		return nil, connect.NewError(connect.CodeNotFound, errors.New("no tag"))
	}
	return connect.NewResponse(&seqsvrv1.NextIDsResponse{Ids: []int64{1}}), nil
}

// The interceptor labels calls with their protocol and code, for all
// three protocols connect-go serves.
func TestInterceptorByProtocolAndCode(t *testing.T) {
	m := New(seqsvrv1connect.AllocServiceNextIDsProcedure)
	path, h := seqsvrv1connect.NewAllocServiceHandler(stub{}, connect.WithInterceptors(m.Interceptor()))
	mux := http.NewServeMux()
	mux.Handle(path, h)
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	ctx := context.Background()
	for _, c := range []struct {
		proto string
		opts  []connect.ClientOption
	}{{"connect", nil}, {"grpc", []connect.ClientOption{connect.WithGRPC()}}, {"grpcweb", []connect.ClientOption{connect.WithGRPCWeb()}}} {
		cli := seqsvrv1connect.NewAllocServiceClient(srv.Client(), srv.URL, c.opts...)
		if _, err := cli.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "t"})); err != nil {
			t.Fatal(c.proto, err)
		}
		if _, err := cli.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{})); connect.CodeOf(err) != connect.CodeNotFound {
			t.Fatal(c.proto, err)
		}
		for _, code := range []string{"ok", "not_found"} {
			if n := counter(t, m.handled.WithLabelValues("seqsvr.v1.AllocService", "NextIDs", c.proto, code)); n != 1 {
				t.Errorf("%s %s: counted %v, want 1", c.proto, code, n)
			}
		}
	}
	if n := count(m.duration); n != 2 {
		t.Errorf("%d duration series, want 2 (ok and not_found)", n)
	}
}

// H1 counts what the front answers with the code the route reported, and
// nothing for what it declines or for non-RPC paths; it never reads the
// body.
func TestH1(t *testing.T) {
	m := New(seqsvrv1connect.StoreServiceReserveSegmentProcedure)
	h := m.H1(h1.HandlerFunc(func(req *h1.Request, resp *h1.Response) bool {
		switch string(req.Body) {
		case "ok":
			resp.Body, resp.Code = []byte{1}, "ok"
			return true
		case "err":
			resp.Status, resp.Code, resp.Body = 429, "resource_exhausted", []byte(`{"code":"unavailable"}`)
			return true
		case "none":
			resp.Status = 500
			return true
		}
		return false
	}))
	serve := func(path, body string) bool {
		return h.ServeH1(&h1.Request{Path: []byte(path), Body: []byte(body)}, &h1.Response{})
	}
	const p = "/seqsvr.v1.StoreService/ReserveSegment"
	if !serve(p, "ok") || !serve(p, "ok") || !serve(p, "err") || !serve(p, "none") || serve(p, "decline") || !serve("/api/segment/get/t", "ok") {
		t.Fatal("H1 changed what the wrapped handler answered")
	}
	for code, want := range map[string]float64{"ok": 2, "resource_exhausted": 1, "unknown": 1} {
		if n := counter(t, m.handled.WithLabelValues("seqsvr.v1.StoreService", "ReserveSegment", "connect", code)); n != want {
			t.Errorf("%s: %v, want %v", code, n, want)
		}
	}
	if n := count(m.handled); n != 3 {
		t.Errorf("%d counter series, want 3 (the declined call and the Leaf path are not counted)", n)
	}
}

// Paths that name no registered procedure, however many, share the
// "unknown" series: a caller cannot add a series with a path of its own,
// whichever of Observe and H1 counts it.
func TestUnknownPathsShareOneSeries(t *testing.T) {
	m := New(seqsvrv1connect.AllocServiceNextIDsProcedure)
	h := m.H1(h1.HandlerFunc(func(_ *h1.Request, resp *h1.Response) bool {
		resp.Body, resp.Code = []byte{1}, "ok"
		return true
	}))
	for i := range 1000 {
		p := fmt.Sprintf("/evil%d.Service/M%d", i, i)
		m.Observe(p, "grpc", "unauthenticated", 0)
		m.Observe(p, "connect", "ok", 0)
		h.ServeH1(&h1.Request{Path: []byte(p)}, &h1.Response{})
	}
	m.Observe(seqsvrv1connect.AllocServiceNextIDsProcedure, "connect", "ok", 0)
	if n := count(m.handled); n != 3 {
		t.Errorf("%d counter series, want 3 (unknown ok and unauthenticated, NextIDs ok)", n)
	}
	if n := counter(t, m.handled.WithLabelValues(Unknown, Unknown, "connect", "ok")); n != 2000 {
		t.Errorf("unknown ok counted %v, want 2000", n)
	}
	if n := len(*m.ok.Load()); n != 2 {
		t.Errorf("%d cached ok series, want 2", n)
	}
	m.Add("/evil7.Service/M7")
	m.Observe("/evil7.Service/M7", "connect", "ok", 0)
	if n := counter(t, m.handled.WithLabelValues("evil7.Service", "M7", "connect", "ok")); n != 1 {
		t.Errorf("a procedure added later counted %v, want 1", n)
	}
}

func counter(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var out dto.Metric
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetCounter().GetValue()
}

// count is how many series c exports.
func count(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric)
	go func() {
		c.Collect(ch)
		close(ch)
	}()
	n := 0
	for range ch {
		n++
	}
	return n
}
