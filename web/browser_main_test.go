package web_test

import (
	"fmt"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/poll"
)

const (
	testTag   = "web"
	testSpace = "webspace"
)

// TestBrowser loads both status pages in the system Chromium against a
// real cluster and checks what they show against the cluster, then calls
// the cluster from a page on another origin through connect-web over
// Connect JSON, Connect binary and gRPC-web (see browser.mjs).
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the browser test starts real processes and Chromium (make test runs it)")
	}
	needBrowser(t)
	if isolate(t) {
		return
	}
	bc := startBrowserCluster(t)
	c := bc.c
	ctx := ctxT(t)
	if err := c.CreateTag(ctx, &seqsvrv1.CreateTagRequest{Tag: testTag, Step: 1000, Description: "browser test"}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateSpace(ctx, &seqsvrv1.CreateSpaceRequest{Space: testSpace, KeyCount: 1000, SectionSize: 100, Step: 100}); err != nil {
		t.Fatal(err)
	}
	for i, a := range c.Allocs {
		_, err := c.AllocClient(a).NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: testTag, Count: int32(5 + i)}))
		check(t, err)
	}
	// An allocsvr learns of a new space at its next heartbeat.
	poll.UntilOK(t, 20*time.Second, "NextSeq on the new space", func() error {
		_, err := c.SeqClient(c.Allocs[0]).NextSeq(ctx, connect.NewRequest(&seqsvrv1.NextSeqRequest{Space: testSpace, Key: 1}))
		return err
	})
	waitRoutingSettled(t, c)

	stores := make([]string, len(c.Stores))
	for i, s := range c.Stores {
		stores[i] = s.URL()
	}
	allocs := map[string]string{}
	for _, a := range c.Allocs {
		allocs[a.Name] = a.URL()
	}
	cfg := map[string]any{
		"chromium": chromiumPath(), "spki": spki(t, bc.sec.CertFile) + "," + spki(t, bc.sec.AllocServeCertFile), "stores": stores, "allocs": allocs,
		"tokens": map[string]string{"client": bc.sec.ClientToken, "alloc": bc.sec.AllocToken},
		"tag":    testTag, "space": testSpace, "shots": *shots, "shotAlloc": "a2",
	}

	t.Run("store page", func(t *testing.T) {
		before := snapshot(t, c)
		cfg["phase"] = "store"
		var res pagesResult
		runBrowser(t, cfg, &res)
		after := snapshot(t, c)
		checkStorePage(t, c, res.Store, before, after, bc.sec.AllocToken)
		checkBrowserErrors(t, res.ConsoleErrors, res.RequestFailures)
	})

	t.Run("alloc pages", func(t *testing.T) {
		before := snapshot(t, c)
		cfg["phase"] = "alloc"
		var res pagesResult
		runBrowser(t, cfg, &res)
		after := snapshot(t, c)
		for _, a := range c.Allocs {
			checkAllocPage(t, a.Name, res.Allocs[a.Name], before.allocs[a.Name], after.allocs[a.Name])
		}
		checkBrowserErrors(t, res.ConsoleErrors, res.RequestFailures)
	})

	t.Run("cross-origin", func(t *testing.T) {
		a2 := c.Allocs[1]
		if _, on := metricValue(t, c, a2, "seqsvr_http_fast_requests_total"); !on {
			t.Fatal("a2 runs without its HTTP/1.1 front: the test means it to be in the path")
		}
		handoffs := metricSum(t, c, a2, "seqsvr_http_handoffs_total{")
		origin := crossOriginServer(t)
		cfg["phase"], cfg["origin"] = "cross", origin
		var res crossResult
		runBrowser(t, cfg, &res)
		checkCross(t, c, res.Cross, origin)
		checkBrowserErrors(t, res.ConsoleErrors, res.RequestFailures)
		// The browser's connections to a2 met its HTTP/1.1 front first.
		// Their first request (a preflight, a GET) is not a fast route, so
		// the front handed each connection to net/http, which answered
		// everything above correctly: the fast paths route around what
		// they do not serve. (Binary Connect NextIDs on a fresh
		// connection is what the front answers itself; the serve package
		// tests that, and that the metrics count it.)
		if d := metricSum(t, c, a2, "seqsvr_http_handoffs_total{") - handoffs; d < 1 {
			t.Errorf("a2's front handed %v browser connections to net/http, want >= 1", d)
		}
		t.Logf("a2's front answered %v requests itself in all", metric(t, c, a2, "seqsvr_http_fast_requests_total"))
		for series, least := range map[string]float64{
			`rpc_server_handled_total{rpc_code="ok",rpc_method="NextIDs",rpc_protocol="grpcweb",rpc_service="seqsvr.v1.AllocService"}`:               1,
			`rpc_server_handled_total{rpc_code="invalid_argument",rpc_method="NextIDs",rpc_protocol="connect",rpc_service="seqsvr.v1.AllocService"}`: 4,
			`rpc_server_handled_total{rpc_code="not_found",rpc_method="NextIDs",rpc_protocol="grpcweb",rpc_service="seqsvr.v1.AllocService"}`:        1,
			`rpc_server_handled_total{rpc_code="unauthenticated",rpc_method="NextIDs",rpc_protocol="connect",rpc_service="seqsvr.v1.AllocService"}`:  2,
			`rpc_server_handled_total{rpc_code="ok",rpc_method="Status",rpc_protocol="connect",rpc_service="seqsvr.v1.AllocService"}`:                2,
		} {
			if v := metric(t, c, a2, series); v < least {
				t.Errorf("a2 /metrics %s = %v, want >= %v", series, v, least)
			}
		}
		if v := metric(t, c, c.Stores[0], `rpc_server_handled_total{rpc_code="permission_denied",rpc_method="CreateTag",rpc_protocol="grpcweb",rpc_service="seqsvr.v1.StoreService"}`); v != 1 {
			t.Errorf("s1 counted %v refused grpc-web CreateTag calls, want 1", v)
		}
	})
}

// waitRoutingSettled waits until every section of the test space has an
// owner and none is moving, so the pages and the truth agree.
func waitRoutingSettled(t *testing.T, c *launch.Cluster) {
	t.Helper()
	poll.UntilOK(t, 30*time.Second, "the routing of "+testSpace+" to settle", func() error {
		rt, err := c.StoreClient(c.Stores[0]).GetRouting(ctxT(t), connect.NewRequest(&seqsvrv1.GetRoutingRequest{Space: testSpace}))
		settled := err == nil && len(rt.Msg.GetSections()) > 0
		owners := map[string]bool{}
		for _, s := range rt.Msg.GetSections() {
			settled = settled && s.GetOwner() != "" && s.GetNextOwner() == ""
			owners[s.GetOwner()] = true
		}
		if settled && len(owners) == len(c.Allocs) {
			return nil
		}
		return fmt.Errorf("not settled: %v %v", rt, err)
	})
}

// truth is the cluster as Go clients see it.
type truth struct {
	leader  string
	members map[string]*seqsvrv1.ClusterStatusResponse // by member, its own view
	tag     *seqsvrv1.Tag
	routing *seqsvrv1.RoutingTable
	allocs  map[string]*seqsvrv1.StatusResponse
}

func snapshot(t *testing.T, c *launch.Cluster) truth {
	t.Helper()
	ctx := ctxT(t)
	tr := truth{members: map[string]*seqsvrv1.ClusterStatusResponse{}, allocs: map[string]*seqsvrv1.StatusResponse{}}
	for _, s := range c.Stores {
		st, err := c.Status(ctx, s)
		check(t, err)
		tr.members[s.NodeID] = st
		if st.GetLeaderId() != "" {
			tr.leader = st.GetLeaderId()
		}
	}
	store := c.StoreClient(c.Stores[0])
	tag, err := store.GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: testTag}))
	check(t, err)
	rt, err := store.GetRouting(ctx, connect.NewRequest(&seqsvrv1.GetRoutingRequest{Space: testSpace}))
	check(t, err)
	tr.tag, tr.routing = tag.Msg, rt.Msg
	for _, a := range c.Allocs {
		st, err := c.AllocClient(a).Status(ctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
		check(t, err)
		tr.allocs[a.Name] = st.Msg
	}
	return tr
}
