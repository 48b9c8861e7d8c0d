package main

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/auth"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
)

// TestLimitsUnderAttack is the allocsvr's test of the same name on a
// storesvr's CreateTag (role admin), plain and under TLS with client
// certificates; the normal client reads a tag.
func TestLimitsUnderAttack(t *testing.T) {
	for _, secure := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "tls"}[secure]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l := launchtest.StartLimited(t, secure, 0)
			s := l.C.Stores[0]
			hc := launchtest.ClientFrom(launchtest.NormalFrom, l.TLS)
			ctx := launchtest.Context(t, 30*time.Second)
			admin := seqsvrv1connect.NewStoreServiceClient(hc, s.URL(), connect.WithInterceptors(auth.Bearer(l.Sec.AdminToken)))
			if _, err := admin.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "order"})); err != nil {
				t.Fatal(err)
			}
			client := seqsvrv1connect.NewStoreServiceClient(hc, s.URL(), connect.WithInterceptors(auth.Bearer(l.Sec.ClientToken)))
			tg := launchtest.Target{Addr: s.HTTPAddr, TLS: l.TLS, Path: seqsvrv1connect.StoreServiceCreateTagProcedure,
				Token: l.Sec.AdminToken, Pid: s.Pid(), BodyTimeout: launchtest.LimitedBodyTimeout, H2MaxStreams: launchtest.LimitedH2MaxStreams,
				Base: s.URL(), Client: hc,
				Normal: func(ctx context.Context) error {
					_, err := client.GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "order"}))
					return err
				}}
			launchtest.Attack(t, "storesvr "+name, tg)
			launchtest.CheckConnLimit(t, tg, launchtest.LimitedPerAddr)
		})
	}
}
