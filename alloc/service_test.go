package alloc

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/alloc/segment"
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/routes/routestest"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// svcFakeSegments is a stand-in allocator for the handler tests only: it
// counts calls so a test can prove validation stops bad requests first.
// IDs count up from 1 across all tags; when only is set, every other tag
// is not found.
type svcFakeSegments struct {
	mu    sync.Mutex
	calls int
	next  int64
	err   error
	only  string
}

func (f *svcFakeSegments) NextIDs(_ context.Context, tag string, count int) ([]int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	if f.only != "" && tag != f.only {
		return nil, fmt.Errorf("%w: tag %q", errs.NotFound, tag)
	}
	ids := make([]int64, count)
	for i := range ids {
		f.next++
		ids[i] = f.next
	}
	return ids, nil
}

// NextIDRanges hands out what NextIDs would, as one range.
func (f *svcFakeSegments) NextIDRanges(_ context.Context, tag string, count int) ([]segment.Range, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	if f.only != "" && tag != f.only {
		return nil, fmt.Errorf("%w: tag %q", errs.NotFound, tag)
	}
	r := segment.Range{First: f.next + 1, Last: f.next + int64(count)}
	f.next = r.Last
	return []segment.Range{r}, nil
}

func (f *svcFakeSegments) Status() []*seqsvrv1.TagStatus {
	return []*seqsvrv1.TagStatus{{Tag: "order", Position: f.next + 1}}
}

func (f *svcFakeSegments) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

type svcFakeSnowflake struct {
	next int64
	err  error
}

func (f *svcFakeSnowflake) NextIDs(_ context.Context, count int) ([]int64, error) {
	if f.err != nil {
		return nil, f.err
	}
	ids := make([]int64, count)
	for i := range ids {
		f.next++
		ids[i] = f.next << 22
	}
	return ids, nil
}

func (f *svcFakeSnowflake) Decode(id int64) (*seqsvrv1.DecodeSnowflakeResponse, error) {
	return &seqsvrv1.DecodeSnowflakeResponse{TimestampMs: id >> 22, WorkerId: 7}, nil
}

func (f *svcFakeSnowflake) Status() *seqsvrv1.SnowflakeStatus {
	return &seqsvrv1.SnowflakeStatus{Enabled: true, WorkerId: 7}
}

func newTestService(t *testing.T) (*Service, *svcFakeSegments, seqsvrv1connect.AllocServiceClient, *httptest.Server) {
	t.Helper()
	seg := &svcFakeSegments{}
	svc := NewService("node-a", seg)
	srv := httptest.NewServer(serveMux(svc))
	t.Cleanup(srv.Close)
	return svc, seg, seqsvrv1connect.NewAllocServiceClient(srv.Client(), srv.URL), srv
}

// serveMux serves svc through net/http as the allocsvr does: the Connect
// handler and the Leaf API.
func serveMux(svc *Service) *http.ServeMux { return routestest.Mount(svc.Routes()) }

func wantCode(t *testing.T, err error, code connect.Code) {
	t.Helper()
	if got := connect.CodeOf(err); got != code {
		t.Fatalf("code = %v (err %v), want %v", got, err, code)
	}
}

func TestNextIDsCountRules(t *testing.T) {
	_, seg, c, _ := newTestService(t)
	ctx := context.Background()

	res, err := c.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order"}))
	if err != nil || len(res.Msg.Ids) != 1 {
		t.Fatalf("count 0: %v err %v, want one ID", res, err)
	}
	res, err = c.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order", Count: spec.MaxCount}))
	if err != nil || len(res.Msg.Ids) != spec.MaxCount {
		t.Fatalf("count max: %v err %v", res != nil, err)
	}
	before := seg.callCount()
	for _, n := range []int32{-1, spec.MaxCount + 1, -2147483648} {
		_, err := c.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order", Count: n}))
		wantCode(t, err, connect.CodeInvalidArgument)
	}
	if seg.callCount() != before {
		t.Fatalf("allocator called for invalid counts")
	}
}

// NextIDRanges takes counts up to spec.MaxRangeCount, far above NextIDs'
// bound; anything else is refused before the allocator is asked.
func TestNextIDRangesCountRules(t *testing.T) {
	_, seg, c, _ := newTestService(t)
	ctx := context.Background()
	for _, n := range []int32{0, spec.MaxCount + 1, spec.MaxRangeCount} {
		res, err := c.NextIDRanges(ctx, connect.NewRequest(&seqsvrv1.NextIDRangesRequest{Tag: "order", Count: n}))
		if err != nil || len(res.Msg.GetRanges()) != 1 {
			t.Fatalf("count %d: %v err %v", n, res, err)
		}
		if r := res.Msg.GetRanges()[0]; r.GetLast()-r.GetFirst()+1 != int64(max(n, 1)) {
			t.Fatalf("count %d: range %v", n, r)
		}
	}
	before := seg.callCount()
	for _, n := range []int32{-1, spec.MaxRangeCount + 1, -2147483648} {
		_, err := c.NextIDRanges(ctx, connect.NewRequest(&seqsvrv1.NextIDRangesRequest{Tag: "order", Count: n}))
		wantCode(t, err, connect.CodeInvalidArgument)
	}
	_, err := c.NextIDRanges(ctx, connect.NewRequest(&seqsvrv1.NextIDRangesRequest{Tag: "a b"}))
	wantCode(t, err, connect.CodeInvalidArgument)
	if seg.callCount() != before {
		t.Fatalf("allocator called for invalid requests")
	}
}

func TestNextIDsTagRules(t *testing.T) {
	_, seg, c, _ := newTestService(t)
	for _, tag := range []string{"", "a b", "ü", strings.Repeat("x", 129), "x/y"} {
		_, err := c.NextIDs(context.Background(), connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: tag}))
		wantCode(t, err, connect.CodeInvalidArgument)
	}
	if seg.callCount() != 0 {
		t.Fatalf("allocator called %d times for malformed tags", seg.callCount())
	}
	if _, err := c.NextIDs(context.Background(), connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "A-z_0.9:" + strings.Repeat("x", 120)})); err != nil {
		t.Fatalf("valid 128-byte tag refused: %v", err)
	}
}

func TestNextIDsErrorCodes(t *testing.T) {
	_, seg, c, _ := newTestService(t)
	for _, tc := range []struct {
		err  error
		code connect.Code
	}{
		{fmt.Errorf("%w: tag x", errs.NotFound), connect.CodeNotFound},
		{fmt.Errorf("%w: store down", errs.Unavailable), connect.CodeUnavailable},
		{connect.NewError(connect.CodeAlreadyExists, errors.New("x")), connect.CodeAlreadyExists},
		{errors.New("boom"), connect.CodeInternal},
	} {
		seg.err = tc.err
		_, err := c.NextIDs(context.Background(), connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "t"}))
		wantCode(t, err, tc.code)
	}
}

func TestSnowflakeLifecycle(t *testing.T) {
	svc, _, c, _ := newTestService(t)
	ctx := context.Background()

	svc.SetSnowflakeReason("store unreachable: dial refused")
	_, err := c.NextSnowflakeIDs(ctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{}))
	wantCode(t, err, connect.CodeUnavailable)
	if !strings.Contains(err.Error(), "dial refused") {
		t.Fatalf("reason missing from %v", err)
	}
	_, err = c.DecodeSnowflake(ctx, connect.NewRequest(&seqsvrv1.DecodeSnowflakeRequest{Id: 5}))
	wantCode(t, err, connect.CodeUnavailable)
	st, err := c.Status(ctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
	if err != nil || st.Msg.Snowflake.GetEnabled() || st.Msg.Snowflake.GetReason() == "" || st.Msg.NodeId != "node-a" {
		t.Fatalf("status before start: %v %v", st, err)
	}

	sf := &svcFakeSnowflake{}
	svc.SetSnowflake(sf)
	svc.SetSnowflakeReason("ignored once started")
	res, err := c.NextSnowflakeIDs(ctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{Count: 3}))
	if err != nil || len(res.Msg.Ids) != 3 {
		t.Fatalf("after start: %v %v", res, err)
	}
	_, err = c.NextSnowflakeIDs(ctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{Count: -5}))
	wantCode(t, err, connect.CodeInvalidArgument)
	_, err = c.NextSnowflakeIDs(ctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{Tag: "bad tag"}))
	wantCode(t, err, connect.CodeInvalidArgument)
	_, err = c.DecodeSnowflake(ctx, connect.NewRequest(&seqsvrv1.DecodeSnowflakeRequest{Id: -1}))
	wantCode(t, err, connect.CodeInvalidArgument)
	dec, err := c.DecodeSnowflake(ctx, connect.NewRequest(&seqsvrv1.DecodeSnowflakeRequest{Id: res.Msg.Ids[0]}))
	if err != nil || dec.Msg.WorkerId != 7 {
		t.Fatalf("decode: %v %v", dec, err)
	}
	st, err = c.Status(ctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
	if err != nil || !st.Msg.Snowflake.GetEnabled() || len(st.Msg.Tags) != 1 {
		t.Fatalf("status after start: %v %v", st, err)
	}

	sf.err = fmt.Errorf("%w: lease lost", errs.FailedPrecondition)
	_, err = c.NextSnowflakeIDs(ctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{}))
	wantCode(t, err, connect.CodeFailedPrecondition)
}
