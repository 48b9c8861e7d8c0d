package alloc

import (
	"net/http"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/routes"
	"github.com/seqsvr/seqsvr/internal/routes/routestest"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// Every front route of the allocsvr's Service against connect-go and the
// net/http Leaf API: IDs, errors, and what the front leaves to net/http.
// Keys of space "s" from 50 up are another allocsvr's (svcFakeSeq).
func TestRoutesMatchConnectAndNetHTTP(t *testing.T) {
	post := func(name, procedure string, m proto.Message, front bool) routestest.Case {
		b, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return routestest.Case{Name: name, Path: procedure, Header: routestest.Connect(), Body: b, Front: front}
	}
	ids := func(name string, req *seqsvrv1.NextIDsRequest) routestest.Case {
		return post("NextIDs "+name, seqsvrv1connect.AllocServiceNextIDsProcedure, req, true)
	}
	ranges := func(name string, req *seqsvrv1.NextIDRangesRequest) routestest.Case {
		return post("NextIDRanges "+name, seqsvrv1connect.AllocServiceNextIDRangesProcedure, req, true)
	}
	get := func(path string, front bool) routestest.Case {
		return routestest.Case{Name: "GET " + path, Method: http.MethodGet, Path: path, Front: front}
	}
	cases := []routestest.Case{
		ids("count 0", &seqsvrv1.NextIDsRequest{Tag: "order"}),
		ids("count 1", &seqsvrv1.NextIDsRequest{Tag: "order", Count: 1}),
		ids("count 1000", &seqsvrv1.NextIDsRequest{Tag: "order", Count: 1000}),
		ids("count max", &seqsvrv1.NextIDsRequest{Tag: "order", Count: spec.MaxCount}),
		ids("count 7", &seqsvrv1.NextIDsRequest{Tag: "order", Count: 7}),
		ids("bad tag", &seqsvrv1.NextIDsRequest{Tag: "bad tag!", Count: 1}),
		ids("no tag", &seqsvrv1.NextIDsRequest{}),
		ids("long tag", &seqsvrv1.NextIDsRequest{Tag: strings.Repeat("t", 129)}),
		ids("count -1", &seqsvrv1.NextIDsRequest{Tag: "order", Count: -1}),
		ids("count too big", &seqsvrv1.NextIDsRequest{Tag: "order", Count: spec.MaxCount + 1}),
		ids("unknown tag", &seqsvrv1.NextIDsRequest{Tag: "nope", Count: 1}),
		{Name: "NextIDs JSON", Path: seqsvrv1connect.AllocServiceNextIDsProcedure, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"tag":"order","count":2}`)},

		ranges("count 0", &seqsvrv1.NextIDRangesRequest{Tag: "order"}),
		ranges("count 1", &seqsvrv1.NextIDRangesRequest{Tag: "order", Count: 1}),
		ranges("count above NextIDs'", &seqsvrv1.NextIDRangesRequest{Tag: "order", Count: spec.MaxCount + 1}),
		ranges("count max", &seqsvrv1.NextIDRangesRequest{Tag: "order", Count: spec.MaxRangeCount}),
		ranges("bad tag", &seqsvrv1.NextIDRangesRequest{Tag: "bad tag!", Count: 1}),
		ranges("count -1", &seqsvrv1.NextIDRangesRequest{Tag: "order", Count: -1}),
		ranges("count too big", &seqsvrv1.NextIDRangesRequest{Tag: "order", Count: spec.MaxRangeCount + 1}),
		ranges("unknown tag", &seqsvrv1.NextIDRangesRequest{Tag: "nope", Count: 1}),

		post("NextSnowflakeIDs", seqsvrv1connect.AllocServiceNextSnowflakeIDsProcedure, &seqsvrv1.NextSnowflakeIDsRequest{Count: 2}, false),

		get("/api/segment/get/order", true),
		get("/api/segment/get/order", true),
		get("/api/segment/get/nope", true),
		get("/api/segment/get/~order", true),
		get("/api/segment/get/"+strings.Repeat("t", 129), true),
		get("/api/segment/get/ord%65r", false),
		get("/api/segment/get/bad%20tag", false),
		get("/api/segment/get/.", false),
		get("/api/segment/get/..", false),
		get("/api/segment/get/a/../order", false),
		get("/api/segment/get/order/", false),
		{Name: "HEAD segment", Method: http.MethodHead, Path: "/api/segment/get/order"},
		{Name: "POST segment", Method: http.MethodPost, Path: "/api/segment/get/order"},
		{Name: "GET segment with a body", Method: http.MethodGet, Path: "/api/segment/get/order", Body: []byte("a body")},
		get("/api/snowflake/get/order", false),

		get("/api/seq/next/s/7", true),
		get("/api/seq/next/s/7", true),
		get("/api/seq/next/s/0", true),
		get("/api/seq/next/nope/1", true),
		get("/api/seq/next/s/100", true),
		get("/api/seq/next/s/x", true),
		get("/api/seq/next/s/-1", true),
		get("/api/seq/next/s/1e3", true),
		get("/api/seq/next/~s/1", true),
		get("/api/seq/next/s/99999999999999999999", true),
		get("/api/seq/next/s/60", false), // another allocsvr's: net/http forwards
		get("/api/seq/next/s/%37", false),
		get("/api/seq/next/s/7/", false),
		get("/api/seq/next/s/", false),
		get("/api/seq/next/s", false),
		get("/api/seq/next/s/../7", false),
		get("/api/seq/current/s/7", false),
	}
	routestest.Check(t, func(*testing.T) routes.Table {
		svc := NewService("n1", &svcFakeSegments{only: "order"})
		svc.SetSnowflake(&svcFakeSnowflake{})
		svc.SetSeq(&svcFakeSeq{cur: map[uint64]int64{}})
		return svc.Routes()
	}, cases)
}

func TestAppendIDsMatchesProtoMarshal(t *testing.T) {
	for _, ids := range [][]int64{{1}, {0}, {1, 2, 3}, {1 << 40, 1<<40 + 1}, {127, 128, 16383, 16384}, {5, 3, 1 << 20}, {-1, 1}, {1<<63 - 1}, {300, 200, 300},
		{1 << 14, 1<<14 + 1}, {1 << 21, 1<<21 + 7}, {1 << 28, 1<<28 + 9}, {1 << 35, 1<<35 + 2}, {1 << 56, 1<<56 + 1}, {2, 3, 4}} {
		want, err := proto.Marshal(&seqsvrv1.NextIDsResponse{Ids: ids})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendIDs(nil, ids); string(got) != string(want) {
			t.Fatalf("%v: got %x, want %x", ids, got, want)
		}
	}
}
