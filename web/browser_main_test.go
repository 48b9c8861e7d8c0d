package web_test

import (
	"bufio"
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/cluster"
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
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := c.SeqClient(c.Allocs[0]).NextSeq(ctx, connect.NewRequest(&seqsvrv1.NextSeqRequest{Space: testSpace, Key: 1}))
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("NextSeq on the new space: %v", err)
		}
	}
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
		"chromium": chromiumPath(), "spki": spki(t, bc.sec.CertFile), "stores": stores, "allocs": allocs,
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
func waitRoutingSettled(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		rt, err := c.StoreClient(c.Stores[0]).GetRouting(ctxT(t), connect.NewRequest(&seqsvrv1.GetRoutingRequest{Space: testSpace}))
		settled := err == nil && len(rt.Msg.GetSections()) > 0
		owners := map[string]bool{}
		for _, s := range rt.Msg.GetSections() {
			settled = settled && s.GetOwner() != "" && s.GetNextOwner() == ""
			owners[s.GetOwner()] = true
		}
		if settled && len(owners) == len(c.Allocs) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("routing of %s not settled: %v %v", testSpace, rt, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// truth is the cluster as Go clients see it.
type truth struct {
	leader  string
	members map[string]*seqsvrv1.ClusterStatusResponse // by member, its own view
	tag     *seqsvrv1.Tag
	routing *seqsvrv1.RoutingTable
	allocs  map[string]*seqsvrv1.StatusResponse
}

func snapshot(t *testing.T, c *cluster.Cluster) truth {
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

type storeView struct {
	Node      string            `json:"node"`
	Cards     map[string]string `json:"cards"`
	LeaderRow string            `json:"leaderRow"`
	Members   []struct {
		ID, Role, Suffrage, Term, Commit, Applied, HTTPAddr string
	} `json:"members"`
	Tags []struct {
		Tag, MaxID, Step, Description string
	} `json:"tags"`
	Spaces []struct {
		Space, KeyCount, SectionSize, Sections string
	} `json:"spaces"`
	Routing []struct {
		Space    string `json:"space"`
		Note     string `json:"note"`
		Sections []struct {
			Range, Owner, Lease string
		} `json:"sections"`
	} `json:"routing"`
}

type allocView struct {
	Node  string `json:"node"`
	Error string `json:"error"`
	Tags  []struct {
		Tag           string
		Current, Next *struct{ First, Last, Remaining, Pct string }
		Position      string
		Step, Served  string
		Rate          string
		LastRefill    string
	} `json:"tags"`
	Snowflake struct{ State, WorkerID, LeaseLeft, ClockOffset string } `json:"snowflake"`
	Seq       struct {
		Lease  string
		Spaces []struct{ Space, Owned, Ranges string }
	} `json:"seq"`
}

type storeResult struct {
	NoTokenError       string      `json:"noTokenError"`
	NoTokenFieldMarked bool        `json:"noTokenFieldMarked"`
	WithClient         storeView   `json:"withClient"`
	WithAlloc          storeView   `json:"withAlloc"`
	SessionToken       string      `json:"sessionToken"`
	TokenAfterReload   string      `json:"tokenAfterReload"`
	Others             []storeView `json:"others"`
}

type allocResult struct {
	Shown        allocView `json:"shown"`
	AfterTraffic allocView `json:"afterTraffic"`
	Served       int       `json:"served"`
	ChartPoints  int       `json:"chartPoints"`
}

type pagesResult struct {
	Store           storeResult            `json:"store"`
	Allocs          map[string]allocResult `json:"allocs"`
	ConsoleErrors   []string               `json:"consoleErrors"`
	RequestFailures []string               `json:"requestFailures"`
}

func checkStorePage(t *testing.T, c *cluster.Cluster, r storeResult, before, after truth, allocToken string) {
	t.Helper()
	if r.NoTokenError != "unauthenticated" || !r.NoTokenFieldMarked {
		t.Errorf("store page without a token: banner %q, field marked %v; want unauthenticated, marked", r.NoTokenError, r.NoTokenFieldMarked)
	}
	v := r.WithClient
	// Roles and terms are exact unless an election happened while the
	// page was read (2 shared cores, a browser starting): then each
	// figure must lie between the two truths and the page must still be
	// consistent with itself.
	stable := before.leader == after.leader && termsEqual(before, after)
	if !stable {
		t.Logf("an election happened during the store phase (leader %q then %q): checking ranges only", before.leader, after.leader)
	}
	if v.Node != "s1" || v.Cards["leader"] != v.LeaderRow || (stable && v.LeaderRow != before.leader) ||
		(!stable && v.LeaderRow != before.leader && v.LeaderRow != after.leader) {
		t.Errorf("store page: node %q, leader card %q, leader row %q; cluster leader %q (then %q)", v.Node, v.Cards["leader"], v.LeaderRow, before.leader, after.leader)
	}
	if len(v.Members) != len(c.Stores) {
		t.Fatalf("store page shows %d members, want %d: %+v", len(v.Members), len(c.Stores), v.Members)
	}
	leaders := 0
	for _, m := range v.Members {
		b, a := before.members[m.ID], after.members[m.ID]
		if b == nil {
			t.Errorf("store page shows unknown member %q", m.ID)
			continue
		}
		if m.Role == "leader" {
			leaders++
		}
		if want := ownState(b, m.ID); stable && m.Role != want {
			t.Errorf("member %s: role %q, want %q", m.ID, m.Role, want)
		}
		if m.Suffrage != "voter" {
			t.Errorf("member %s: suffrage %q, want voter", m.ID, m.Suffrage)
		}
		between(t, "member "+m.ID+" term", m.Term, b.GetTerm(), a.GetTerm())
		between(t, "member "+m.ID+" commit index", m.Commit, b.GetCommitIndex(), a.GetCommitIndex())
		between(t, "member "+m.ID+" applied index", m.Applied, b.GetAppliedIndex(), a.GetAppliedIndex())
	}
	if stable && leaders != 1 {
		t.Errorf("store page shows %d leaders: %+v", leaders, v.Members)
	}
	s1b, s1a := before.members["s1"], after.members["s1"]
	between(t, "term card", v.Cards["term"], s1b.GetTerm(), s1a.GetTerm())
	between(t, "commit index card", v.Cards["commit index"], s1b.GetCommitIndex(), s1a.GetCommitIndex())
	between(t, "applied index card", v.Cards["applied index"], s1b.GetAppliedIndex(), s1a.GetAppliedIndex())
	tagShown := false
	for _, tg := range v.Tags {
		if tg.Tag == testTag {
			tagShown = true
			if tg.MaxID != itoa(before.tag.GetMaxId()) || tg.Step != "1000" || tg.Description != "browser test" {
				t.Errorf("tag row %+v, want max_id %d step 1000", tg, before.tag.GetMaxId())
			}
		}
	}
	if !tagShown {
		t.Errorf("store page does not show tag %s: %+v", testTag, v.Tags)
	}
	if len(v.Spaces) != 1 || v.Spaces[0].Space != testSpace || v.Spaces[0].KeyCount != "1000" || v.Spaces[0].SectionSize != "100" || v.Spaces[0].Sections != "10" {
		t.Errorf("spaces shown %+v, want %s with 1000 keys in 10 sections of 100", v.Spaces, testSpace)
	}
	// GetRouting needs role alloc: the client token's page says so.
	if len(v.Routing) != 1 || !strings.Contains(v.Routing[0].Note, "PermissionDenied") {
		t.Errorf("routing with a client token: %+v, want a permission_denied note", v.Routing)
	}
	w := r.WithAlloc
	if len(w.Routing) != 1 || w.Routing[0].Note != "" {
		t.Fatalf("routing with an alloc token: %+v", w.Routing)
	}
	var want, wantAfter, got []string
	for _, s := range before.routing.GetSections() {
		want = append(want, fmt.Sprintf("%d-%d %s", s.GetFirstSection(), s.GetLastSection(), s.GetOwner()))
	}
	for _, s := range after.routing.GetSections() {
		wantAfter = append(wantAfter, fmt.Sprintf("%d-%d %s", s.GetFirstSection(), s.GetLastSection(), s.GetOwner()))
	}
	for _, s := range w.Routing[0].Sections {
		got = append(got, s.Range+" "+s.Owner)
		if !strings.HasSuffix(s.Lease, " left") {
			t.Errorf("section %s lease shown as %q", s.Range, s.Lease)
		}
	}
	// Sections move when an allocsvr's lease lapses (an election long
	// enough): then the page may show either table.
	if !slices.Equal(got, want) && !slices.Equal(got, wantAfter) {
		t.Errorf("routing shown %q, want %q (or, after a move, %q)", got, want, wantAfter)
	}
	// The other members' pages: their own name, the same members and tag.
	if len(r.Others) != len(c.Stores)-1 {
		t.Fatalf("%d other store pages read, want %d", len(r.Others), len(c.Stores)-1)
	}
	for i, o := range r.Others {
		if want := c.Stores[i+1].NodeID; o.Node != want || len(o.Members) != len(c.Stores) || len(o.Tags) != 1 || o.Tags[0].MaxID != itoa(after.tag.GetMaxId()) {
			t.Errorf("store page of %s: node %q, %d members, tags %+v (max_id %d)", want, o.Node, len(o.Members), o.Tags, after.tag.GetMaxId())
		}
	}
	if r.SessionToken != allocToken || r.TokenAfterReload != r.SessionToken {
		t.Errorf("token in session storage %q, after reload %q", r.SessionToken, r.TokenAfterReload)
	}
}

// checkBrowserErrors fails on any console error and any request the
// browser dropped, except drops for ERR_NETWORK_CHANGED: Chromium aborts
// requests in flight when the machine's network configuration changes,
// which other tests running beside this one do (network namespaces).
func checkBrowserErrors(t *testing.T, console, failed []string) {
	t.Helper()
	for _, f := range failed {
		if !strings.HasSuffix(f, "net::ERR_NETWORK_CHANGED") {
			t.Errorf("the browser dropped a request: %s", f)
		} else {
			t.Logf("tolerated: %s", f)
		}
	}
	for _, e := range console {
		if !strings.Contains(e, "net::ERR_NETWORK_CHANGED") {
			t.Errorf("console error: %s", e)
		}
	}
}

func termsEqual(a, b truth) bool {
	for id, st := range a.members {
		if b.members[id].GetTerm() != st.GetTerm() {
			return false
		}
	}
	return true
}

// ownState is member id's role as it sees itself.
func ownState(st *seqsvrv1.ClusterStatusResponse, id string) string {
	for _, m := range st.GetMembers() {
		if m.GetId() == id {
			return m.GetState()
		}
	}
	return ""
}

// between checks that a figure the page showed lies between the truth
// read before and after the page read it (the indexes move with every
// heartbeat the allocsvrs write).
func between(t *testing.T, what, shown string, lo, hi uint64) {
	t.Helper()
	v, err := strconv.ParseUint(shown, 10, 64)
	if err != nil || v < lo || v > hi {
		t.Errorf("%s shown %q, want a number in [%d, %d]", what, shown, lo, hi)
	}
}

func checkAllocPage(t *testing.T, name string, r allocResult, before, after *seqsvrv1.StatusResponse) {
	t.Helper()
	v := r.Shown
	if v.Node != name || v.Error != "" {
		t.Errorf("%s page: node %q, error %q", name, v.Node, v.Error)
	}
	var want *seqsvrv1.TagStatus
	for _, ts := range before.GetTags() {
		if ts.GetTag() == testTag {
			want = ts
		}
	}
	if want == nil || len(v.Tags) != 1 || v.Tags[0].Tag != testTag || v.Tags[0].Current == nil {
		t.Fatalf("%s page tags %+v; allocsvr has %v", name, v.Tags, before.GetTags())
	}
	got, cur := v.Tags[0], want.GetCurrent()
	if got.Current.First != itoa(cur.GetFirst()) || got.Current.Last != itoa(cur.GetLast()) || got.Current.Remaining != itoa(cur.GetRemaining()) ||
		got.Position != itoa(want.GetPosition()) || got.Step != itoa(want.GetStep()) || got.Served != itoa(want.GetIdsServed()) {
		t.Errorf("%s page shows tag %+v current %+v; allocsvr: %v", name, got, *got.Current, want)
	}
	used := float64(cur.GetLast()-cur.GetFirst()+1-cur.GetRemaining()) * 100 / float64(cur.GetLast()-cur.GetFirst()+1)
	if wantPct := fmt.Sprintf("%.1f%% used", float64(int64(used*10))/10); got.Current.Pct != wantPct {
		t.Errorf("%s page: current buffer %q, want %q", name, got.Current.Pct, wantPct)
	}
	if got.LastRefill == "never" || got.LastRefill == "" {
		t.Errorf("%s page: last refill %q", name, got.LastRefill)
	}
	sf := before.GetSnowflake()
	if v.Snowflake.State != "serving" || v.Snowflake.WorkerID != itoa(sf.GetWorkerId()) || !strings.HasSuffix(v.Snowflake.ClockOffset, " ms") ||
		!strings.HasSuffix(v.Snowflake.LeaseLeft, "s") || sf.GetWorkerId() != after.GetSnowflake().GetWorkerId() {
		t.Errorf("%s page snowflake %+v; allocsvr %v", name, v.Snowflake, sf)
	}
	if len(v.Seq.Spaces) != 1 || v.Seq.Spaces[0].Space != testSpace || v.Seq.Spaces[0].Owned != itoa(before.GetSeq().GetSpaces()[0].GetSectionsOwned()) ||
		v.Seq.Spaces[0].Ranges == "none" || !strings.HasSuffix(v.Seq.Lease, " left") {
		t.Errorf("%s page per-key sections %+v; allocsvr %v", name, v.Seq, before.GetSeq())
	}
	a := r.AfterTraffic.Tags
	if r.Served == 0 || len(a) != 1 || !strings.HasSuffix(a[0].Rate, " IDs/s") || r.ChartPoints < 2 {
		t.Errorf("%s page after %d IDs: rate %+v, chart points %d", name, r.Served, a, r.ChartPoints)
	}
	if n, _ := strconv.ParseInt(a[0].Served, 10, 64); n < want.GetIdsServed()+int64(r.Served) {
		t.Errorf("%s page: served %s after %d more IDs, was %d", name, a[0].Served, r.Served, want.GetIdsServed())
	}
}

type call struct {
	Protocol string `json:"protocol"`
	Target   string `json:"target"`
	Call     string `json:"call"`
	OK       any    `json:"ok"`
	Code     string `json:"code"`
	Message  string `json:"message"`
}

type netEvent struct {
	URL             string            `json:"url"`
	Method          string            `json:"method"`
	Type            string            `json:"type"`
	Status          int               `json:"status"`
	Headers         map[string]string `json:"headers"`
	ResponseHeaders map[string]string `json:"responseHeaders"`
}

type crossCalls struct {
	Res     []call `json:"res"`
	Retries int    `json:"retries"`
	Simple  struct {
		Status int            `json:"status"`
		Body   map[string]any `json:"body"`
	} `json:"simple"`
	Network []netEvent `json:"network"`
}

type crossResult struct {
	Cross           crossCalls `json:"cross"`
	ConsoleErrors   []string   `json:"consoleErrors"`
	RequestFailures []string   `json:"requestFailures"`
}

func checkCross(t *testing.T, c *cluster.Cluster, r crossCalls, origin string) {
	t.Helper()
	wantCode := map[string]string{
		"NextIDs no token": "Unauthenticated", "NextIDs bad tag": "InvalidArgument", "NextIDs unknown tag": "NotFound",
		"NextIDs count too big": "InvalidArgument", "GetTag unknown": "NotFound", "CreateTag as client": "PermissionDenied",
		"GetTag wrong token": "Unauthenticated", "DecodeSnowflake no token no deadline": "Unauthenticated",
	}
	seen := map[string]bool{}
	var lastID = map[string]*big.Int{}
	var maxID int64
	workers := map[string]int64{}
	for _, a := range c.Allocs {
		st, err := c.AllocClient(a).Status(ctxT(t), connect.NewRequest(&seqsvrv1.StatusRequest{}))
		check(t, err)
		workers[a.Name] = st.Msg.GetSnowflake().GetWorkerId()
	}
	counted := map[string]int{}
	for _, x := range r.Res {
		what := fmt.Sprintf("%s %s %s", x.Protocol, x.Target, x.Call)
		counted[x.Protocol]++
		if code, ok := wantCode[x.Call]; ok {
			if x.Code != code {
				t.Errorf("%s: code %q (%s), want %s", what, x.Code, x.Message, code)
			}
			continue
		}
		if x.Code != "" {
			t.Errorf("%s failed: %s %s", what, x.Code, x.Message)
			continue
		}
		switch x.Call {
		case "NextIDs", "NextSnowflakeIDs":
			ids := toStrings(x.OK)
			if want := map[string]int{"NextIDs": 5, "NextSnowflakeIDs": 3}[x.Call]; len(ids) != want {
				t.Errorf("%s: %d IDs, want %d", what, len(ids), want)
			}
			key := x.Target + " " + x.Call
			for _, s := range ids {
				id, ok := new(big.Int).SetString(s, 10)
				if !ok || seen[x.Call+s] {
					t.Errorf("%s: ID %q not a number or seen before", what, s)
				}
				seen[x.Call+s] = true
				if prev := lastID[key]; prev != nil && id.Cmp(prev) <= 0 {
					t.Errorf("%s: ID %s after %s from the same allocsvr", what, id, prev)
				}
				lastID[key] = id
				if x.Call == "NextIDs" {
					maxID = max(maxID, id.Int64())
					continue
				}
				d, err := c.AllocClient(c.Allocs[0]).DecodeSnowflake(ctxT(t), connect.NewRequest(&seqsvrv1.DecodeSnowflakeRequest{Id: id.Int64()}))
				check(t, err)
				if d.Msg.GetWorkerId() != workers[x.Target] {
					t.Errorf("%s: snowflake %s has worker %d, %s holds %d", what, id, d.Msg.GetWorkerId(), x.Target, workers[x.Target])
				}
			}
		case "Status":
			if x.OK != x.Target {
				t.Errorf("%s: node %v", what, x.OK)
			}
		case "GetTag":
			// max_id covers every ID handed out so far.
			if v, _ := strconv.ParseInt(fmt.Sprint(x.OK), 10, 64); v < maxID {
				t.Errorf("%s: max_id %v below an ID already handed out (%d)", what, x.OK, maxID)
			}
		default:
			t.Errorf("unexpected call %s", what)
		}
	}
	for _, p := range []string{"connect-json", "connect-binary", "grpc-web"} {
		if want := 2*7 + 4 + map[bool]int{true: 1}[p == "connect-json"]; counted[p] != want {
			t.Errorf("%s: %d calls made, want %d", p, counted[p], want)
		}
	}
	// A GET without a token or custom header is a simple CORS request: no
	// preflight, and its JSON error is readable from the other origin.
	if r.Simple.Status != http.StatusUnauthorized || r.Simple.Body["code"] != "unauthenticated" {
		t.Errorf("simple GET: %d %v, want 401 unauthenticated", r.Simple.Status, r.Simple.Body)
	}
	if r.Retries > 0 {
		t.Logf("the cross-origin calls retried %d times (unavailable or a dropped request)", r.Retries)
	}
	checkNetwork(t, c, r.Network, origin, r.Retries)
}

func toStrings(v any) []string {
	l, _ := v.([]any)
	out := make([]string, 0, len(l))
	for _, x := range l {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// checkNetwork reads what Chromium sent: a CORS preflight allowing the
// page's origin and the Authorization header before the calls that carry
// a token, GET for the side-effect-free RPCs over Connect, POST over
// gRPC-web and for NextIDs, and no preflight for the simple GET.
func checkNetwork(t *testing.T, c *cluster.Cluster, evs []netEvent, origin string, retries int) {
	t.Helper()
	preflights := map[string]int{} // by target host
	var getTag = map[string]int{}
	simpleSeen := 0
	for _, e := range evs {
		u, err := url.Parse(e.URL)
		if err != nil {
			t.Fatal(err)
		}
		isSimple := strings.Contains(e.URL, "message=%7B%20%7D") || strings.HasSuffix(u.Path, "/DecodeSnowflake")
		if e.Method == http.MethodOptions {
			if isSimple {
				t.Errorf("the simple GET was preflighted: %+v", e)
			}
			if e.Status != http.StatusNoContent && e.Status != http.StatusOK {
				t.Errorf("preflight %s: status %d", e.URL, e.Status)
				continue
			}
			if e.ResponseHeaders["access-control-allow-origin"] != origin ||
				(strings.Contains(strings.ToLower(e.Headers["access-control-request-headers"]), "authorization") &&
					!strings.Contains(strings.ToLower(e.ResponseHeaders["access-control-allow-headers"]), "authorization")) {
				t.Errorf("preflight %s from %s: request %v, answer %v", e.URL, origin, e.Headers, e.ResponseHeaders)
			}
			preflights[u.Host]++
			continue
		}
		if isSimple {
			simpleSeen++
		}
		if strings.HasSuffix(u.Path, "/GetTag") {
			getTag[e.Method+" "+u.Query().Get("encoding")+" "+e.Headers["content-type"]]++
		}
		if strings.HasSuffix(u.Path, "/NextIDs") && e.Method != http.MethodPost {
			t.Errorf("NextIDs sent as %s: it hands out IDs, so POST only", e.Method)
		}
	}
	for _, p := range append(slices.Clone(c.Stores[:1]), c.Allocs...) {
		if preflights[p.HTTPAddr] == 0 {
			t.Errorf("no CORS preflight seen to %s (%s): %v", p.Name, p.HTTPAddr, preflights)
		}
	}
	if simpleSeen < 2 || simpleSeen > 2+retries {
		t.Errorf("simple GETs seen %d times, want 2 (a fetch, a connect-web call)", simpleSeen)
	}
	// 3 GetTag calls per Connect codec (ok, unknown, wrong token).
	for k, want := range map[string]int{"GET json ": 3, "GET proto ": 3, "POST  application/grpc-web+proto": 3} {
		if getTag[k] < want || getTag[k] > want+retries {
			t.Errorf("GetTag requests %q: %d, want %d (all: %v)", k, getTag[k], want, getTag)
		}
	}
}

// metric reads one series (name with its labels, as /metrics spells it)
// from p; a missing series is 0.
func metric(t *testing.T, c *cluster.Cluster, p *cluster.Proc, series string) float64 {
	t.Helper()
	v, _ := metricValue(t, c, p, series)
	return v
}

func metricValue(t *testing.T, c *cluster.Cluster, p *cluster.Proc, series string) (float64, bool) {
	t.Helper()
	var v float64
	found := false
	scrape(t, c, p, func(line string) {
		if s, ok := strings.CutPrefix(line, series+" "); ok {
			v, _ = strconv.ParseFloat(s, 64)
			found = true
		}
	})
	return v, found
}

// metricSum adds up every series whose line starts with prefix.
func metricSum(t *testing.T, c *cluster.Cluster, p *cluster.Proc, prefix string) float64 {
	t.Helper()
	var sum float64
	scrape(t, c, p, func(line string) {
		if strings.HasPrefix(line, prefix) {
			f, _ := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			sum += f
		}
	})
	return sum
}

func scrape(t *testing.T, c *cluster.Cluster, p *cluster.Proc, each func(string)) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctxT(t), http.MethodGet, p.URL()+"/metrics", nil)
	res, err := c.HTTPClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		each(sc.Text())
	}
}
