package main

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// TestLimitsUnderAttack holds launchtest.AttackConns connections of each
// shape of launchtest.Shapes on an allocsvr's NextIDs, plain and under TLS: each
// is answered or closed within --body-timeout (plus slack), the
// process's memory stays bounded, a normal client keeps its answers (p99
// logged against calm), one address over --max-conns-per-addr is shed
// while another is served; then /metrics shows tag names only to a token.
func TestLimitsUnderAttack(t *testing.T) {
	for _, secure := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "tls"}[secure]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := launchtest.StartLimited(t, secure, 1)
			a := l.C.Allocs[0]
			hc := launchtest.ClientFrom(launchtest.NormalFrom, l.TLS)
			ctx := launchtest.Context(t, 30*time.Second)
			store := seqsvrv1connect.NewStoreServiceClient(hc, l.C.Stores[0].URL(), connect.WithInterceptors(auth.Bearer(l.Sec.AdminToken)))
			if _, err := store.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "order", Step: 1000})); err != nil {
				t.Fatal(err)
			}
			alloc := seqsvrv1connect.NewAllocServiceClient(hc, a.URL(), connect.WithInterceptors(auth.Bearer(l.Sec.ClientToken)))
			tg := launchtest.Target{Addr: a.HTTPAddr, TLS: l.TLS, Path: seqsvrv1connect.AllocServiceNextIDsProcedure,
				Token: l.Sec.ClientToken, Pid: a.Pid(), BodyTimeout: launchtest.LimitedBodyTimeout, H2MaxStreams: launchtest.LimitedH2MaxStreams,
				Base: a.URL(), Client: hc,
				Normal: func(ctx context.Context) error {
					_, err := alloc.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "order", Count: 1}))
					return err
				}}
			launchtest.Attack(t, "allocsvr "+name, tg)
			launchtest.CheckConnLimit(t, tg, launchtest.LimitedPerAddr)
			checkMetricsGuard(t, hc, a.URL())
		})
	}
}

// checkMetricsGuard: with --auth-file, an anonymous /metrics names no tag
// or space, the scraper's token (role metrics) sees the per-tag series,
// an unknown token is refused, and /healthz and /readyz need none.
func checkMetricsGuard(t *testing.T, hc *http.Client, base string) {
	t.Helper()
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, anon := get("/metrics", "")
	if code != 200 || strings.Contains(anon, `tag="`) || strings.Contains(anon, `space="`) || !strings.Contains(anon, "go_goroutines") {
		t.Errorf("anonymous /metrics: %d, tag or space names shown or no runtime series", code)
	}
	code, full := get("/metrics", launchtest.ScraperToken)
	if code != 200 || !strings.Contains(full, `seqsvr_segment_ids_served_total{tag="order"}`) {
		t.Errorf("/metrics with the scraper token: %d, no per-tag series", code)
	}
	if code, _ := get("/metrics", "not-a-listed-token-at-all"); code != http.StatusUnauthorized {
		t.Errorf("/metrics with an unknown token: %d, want 401", code)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if code, _ := get(p, ""); code != 200 {
			t.Errorf("%s without a token: %d", p, code)
		}
	}
}
