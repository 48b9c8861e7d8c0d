package alloc

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// svcFakeSeq keeps one counter per key of space "s" (keys below 100).
type svcFakeSeq struct{ cur map[uint64]int64 }

func (f *svcFakeSeq) call(space string, keys []uint64, inc int64) ([]int64, uint64, error) {
	if space != "s" {
		return nil, 0, fmt.Errorf("%w: space %q", errs.NotFound, space)
	}
	out := make([]int64, len(keys))
	for i, k := range keys {
		if k >= 100 {
			return nil, 0, fmt.Errorf("%w: key %d", errs.InvalidArgument, k)
		}
		f.cur[k] += inc
		out[i] = f.cur[k]
	}
	return out, 3, nil
}

func (f *svcFakeSeq) Next(_ context.Context, space string, keys []uint64, _ bool) ([]int64, uint64, error) {
	return f.call(space, keys, 1)
}

func (f *svcFakeSeq) Current(_ context.Context, space string, keys []uint64, _ bool) ([]int64, uint64, error) {
	return f.call(space, keys, 0)
}

func (f *svcFakeSeq) Status() *seqsvrv1.SeqStatus {
	return &seqsvrv1.SeqStatus{LeaseValid: true, Spaces: []*seqsvrv1.SeqSpaceStatus{{Space: "s", RoutingVersion: 3}}}
}

func TestLeafSeq(t *testing.T) {
	_, _, _, off := newTestService(t)
	if code, body := leafGet(t, off.URL+"/api/seq/next/s/7"); code != http.StatusServiceUnavailable || !strings.Contains(body, seqDisabled) {
		t.Fatalf("without seq: %d %q", code, body)
	}
	svc, _, c, srv := newTestService(t)
	svc.SetSeq(&svcFakeSeq{cur: map[uint64]int64{}})
	for _, tc := range []struct {
		path string
		code int
		body string
	}{
		{"/api/seq/next/s/7", http.StatusOK, "1"},
		{"/api/seq/next/s/7", http.StatusOK, "2"},
		{"/api/seq/current/s/7", http.StatusOK, "2"},
		{"/api/seq/current/s/8", http.StatusOK, "0"},
		{"/api/seq/next/s/-1", http.StatusBadRequest, ""},
		{"/api/seq/next/s/x", http.StatusBadRequest, ""},
		{"/api/seq/next/s/100", http.StatusBadRequest, ""},
		{"/api/seq/next/t/1", http.StatusNotFound, ""},
	} {
		code, body := leafGet(t, srv.URL+tc.path)
		if code != tc.code || (tc.body != "" && body != tc.body) || (code != http.StatusOK && body == "") {
			t.Fatalf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.code, tc.body)
		}
	}
	res, err := c.Status(context.Background(), connect.NewRequest(&seqsvrv1.StatusRequest{}))
	if err != nil || res.Msg.GetSeq().GetSpaces()[0].GetRoutingVersion() != 3 {
		t.Fatalf("Status seq = %v, %v", res.Msg.GetSeq(), err)
	}
}

func TestStatusSeqDisabled(t *testing.T) {
	_, _, c, _ := newTestService(t)
	res, err := c.Status(context.Background(), connect.NewRequest(&seqsvrv1.StatusRequest{}))
	if err != nil || res.Msg.GetSeq().GetReason() != seqDisabled {
		t.Fatalf("Status seq = %v, %v", res.Msg.GetSeq(), err)
	}
}
