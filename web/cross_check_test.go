package web_test

// What the cross-origin calls answered and what Chromium sent for them.

import (
	"fmt"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
)

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

func checkCross(t *testing.T, c *launch.Cluster, r crossCalls, origin string) {
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
func checkNetwork(t *testing.T, c *launch.Cluster, evs []netEvent, origin string, retries int) {
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
