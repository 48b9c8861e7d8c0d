package storeclient

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

// leanStore is a one-member store that answers ClusterStatus (naming
// itself) and ReserveSegment with fixed bytes from a bare net/http
// handler, so a benchmark's CPU is mostly the client's.
func leanStore(b *testing.B) *httptest.Server {
	seg, _ := proto.Marshal(&seqsvrv1.Segment{Tag: "t", First: 1, Last: 1000, Step: 1000})
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		var out []byte
		switch r.URL.Path {
		case seqsvrv1connect.StoreServiceReserveSegmentProcedure:
			out = seg
		case seqsvrv1connect.StoreServiceClusterStatusProcedure:
			out, _ = proto.Marshal(&seqsvrv1.ClusterStatusResponse{LeaderId: "s1", LeaderHttpAddr: strings.TrimPrefix(srv.URL, "http://")})
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/proto")
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		_, _ = w.Write(out)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// BenchmarkReserveSegment64 is 64 callers reserving through one Client,
// as peerload's store-go target drives it, against a lean in-process
// store. The reference in the same run is connect-go's generated client
// alone over a clone of http.DefaultTransport with 32 idle connections
// per host (the store client's transport before it had its own): no
// leader following, no retries, nothing of this package.
func BenchmarkReserveSegment64(b *testing.B) {
	srv := leanStore(b)
	par := max(1, 64/max(1, testingProcs()))
	b.Run("storeclient", func(b *testing.B) {
		c, err := New([]string{srv.URL}, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		reserveParallel(b, par, func(ctx context.Context, id string) error {
			_, err := c.ReserveSegment(ctx, "t", 1000, id)
			return err
		})
	})
	b.Run("reference=connect-go-default-transport", func(b *testing.B) {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 32
		cl := seqsvrv1connect.NewStoreServiceClient(&http.Client{Transport: tr}, srv.URL)
		reserveParallel(b, par, func(ctx context.Context, id string) error {
			_, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t", Size: 1000, RequestId: id}))
			return err
		})
		tr.CloseIdleConnections()
	})
}

func testingProcs() int { return runtime.GOMAXPROCS(0) }

// reserveParallel runs reserve from par goroutines per core until b.N
// calls, each with a request_id of its own, and fails b on an error.
func reserveParallel(b *testing.B, par int, reserve func(ctx context.Context, id string) error) {
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(par)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ctx, cancel := context.WithTimeout(context.Background(), 5e9)
			err := reserve(ctx, "r-"+strconv.FormatInt(n.Add(1), 10))
			cancel()
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}
