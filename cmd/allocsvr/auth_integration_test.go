package main

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// answer is what a client sees of one call.
type answer struct {
	status      int
	contentType string
	body        string
}

// TestAuthFrontAnswers: with --auth-file, the calls the HTTP/1.1 front
// serves (binary Connect NextIDs, Leaf segment GET) are answered by the
// front only with an allowed token; a refusal is net/http's, so it is the
// same bytes with the front on and off. The store runs open here: only the
// allocsvr's checks are under test.
func TestAuthFrontAnswers(t *testing.T) {
	byFlags := map[bool][]answer{}
	launchtest.EachFastHTTP(t, func(t *testing.T, flags []string) {
		authPath := filepath.Join(t.TempDir(), "auth.json")
		writeTestFile(t, authPath, authFile(entry("app", secClientTok, "client")))
		c := launchtest.StartCluster(t, 1, 1, flags, append([]string{"--auth-file", authPath}, flags...))
		createTag(t, c, "front", 1000)
		base := c.Allocs[0].URL()
		body, err := proto.Marshal(&seqsvrv1.NextIDsRequest{Tag: "front", Count: 2})
		if err != nil {
			t.Fatal(err)
		}
		do := func(method, path, token string, body []byte) answer {
			req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
			if body != nil {
				req.Header.Set("Content-Type", "application/proto")
			}
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			// A new connection per call: a declined request hands its
			// connection to net/http for good.
			hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			res, err := hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			return answer{res.StatusCode, res.Header.Get("Content-Type"), string(b)}
		}
		before, _ := launchtest.Metric(t, base, "seqsvr_http_fast_requests_total")
		var got []answer
		for _, tok := range []string{"", "not-a-known-token-at-all"} {
			got = append(got, do(http.MethodPost, seqsvrv1connect.AllocServiceNextIDsProcedure, tok, body))
			got = append(got, do(http.MethodGet, "/api/segment/get/front", tok, nil))
		}
		for _, a := range got {
			if a.status != http.StatusUnauthorized {
				t.Errorf("refused call answered %+v", a)
			}
		}
		if a := do(http.MethodPost, seqsvrv1connect.AllocServiceNextIDsProcedure, secClientTok, body); a.status != http.StatusOK {
			t.Errorf("NextIDs as client: %+v", a)
		}
		if a := do(http.MethodGet, "/api/segment/get/front", secClientTok, nil); a.status != http.StatusOK {
			t.Errorf("Leaf as client: %+v", a)
		}
		after, _ := launchtest.Metric(t, base, "seqsvr_http_fast_requests_total")
		if front := !slices.Contains(flags, launchtest.FastHTTPOff); front && after-before != 2 {
			t.Errorf("the front served %v calls, want the 2 allowed ones", after-before)
		}
		byFlags[len(flags) == 0] = got
	})
	if on, off := byFlags[true], byFlags[false]; on != nil && off != nil && !slices.Equal(on, off) {
		t.Errorf("refusals differ:\nfront on:  %+v\nfront off: %+v", on, off)
	}
}
