package alloc

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"connectrpc.com/connect"

	"github.com/seqsvr/seqsvr/alloc/seq"
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// svcFakeSeq keeps one counter per key of space "s" (keys below 100).
// Keys from 50 up are another allocsvr's: NextSeqHere declines them with
// seq.ErrNotOwner, NextSeq serves them as if forwarded, and refuses them
// when the call was forwarded already. It is safe for concurrent use.
type svcFakeSeq struct {
	mu  sync.Mutex
	cur map[uint64]int64
}

const svcFakeSeqOwned = 50 // keys below are this allocsvr's

func (f *svcFakeSeq) call(space string, key uint64, inc int64, forwarded, here bool) (int64, uint64, error) {
	if space != "s" {
		return 0, 0, fmt.Errorf("%w: space %q", errs.NotFound, space)
	}
	if key >= 100 {
		return 0, 0, fmt.Errorf("%w: key %d", errs.InvalidArgument, key)
	}
	if key >= svcFakeSeqOwned && here {
		return 0, 0, seq.ErrNotOwner
	}
	if key >= svcFakeSeqOwned && forwarded {
		return 0, 0, fmt.Errorf("%w: key %d is not mine (a forwarded call is not forwarded again)", errs.Unavailable, key)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cur[key] += inc
	return f.cur[key], 3, nil
}

func (f *svcFakeSeq) NextSeq(_ context.Context, space string, key uint64, forwarded bool) (int64, uint64, error) {
	return f.call(space, key, 1, forwarded, false)
}

func (f *svcFakeSeq) CurrentSeq(_ context.Context, space string, key uint64, forwarded bool) (int64, uint64, error) {
	return f.call(space, key, 0, forwarded, false)
}

func (f *svcFakeSeq) NextSeqHere(_ context.Context, space string, key uint64) (int64, uint64, error) {
	return f.call(space, key, 1, false, true)
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
