package main

import (
	"path/filepath"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// TestSecureRotationWithoutSignal: credential files rewritten on disk
// take effect within seconds, with no signal and no restart (a rotated
// Kubernetes Secret gets neither): a client token swapped in the
// allocsvr's auth file, then the token the allocsvr presents to the
// store rotated as docs/security.md says (the stores list both, the
// token file is rewritten, the old token leaves the stores' list).
func TestSecureRotationWithoutSignal(t *testing.T) {
	s := startSecure(t, 1)
	ctx := launchtest.Context(t, 90*time.Second)
	dir := filepath.Dir(s.allocAuth)
	storeAuth, tokFile := filepath.Join(dir, "store-auth.json"), filepath.Join(dir, "alloc.token")
	al := seqsvrv1connect.NewAllocServiceClient(s.noCert, s.allocURL)
	st := seqsvrv1connect.NewStoreServiceClient(s.withCert, s.storeURLs[0])

	writeTestFile(t, s.allocAuth, authFile(entry("app2", secNewTok, "client"), entry("allocsvr", secAllocTok, "alloc")))
	poll.UntilCtx(ctx, t, "the allocsvr accepts the token its rewritten auth file lists", func() bool {
		_, err := al.Status(ctx, withToken(&seqsvrv1.StatusRequest{}, secNewTok))
		return err == nil
	})
	_, err := al.Status(ctx, withToken(&seqsvrv1.StatusRequest{}, secClientTok))
	wantCode(t, "a token removed from the auth file", err, connect.CodeUnauthenticated)

	const rotatedAlloc = "alloc-token-rotated-ddddddddd"
	ops := entry("ops", secAdminTok, "admin")
	writeTestFile(t, storeAuth, authFile(ops, entry("allocsvr", secAllocTok, "alloc"), entry("allocsvr-next", rotatedAlloc, "alloc")))
	writeTestFile(t, tokFile, rotatedAlloc+"\n")
	writeTestFile(t, storeAuth, authFile(ops, entry("allocsvr-next", rotatedAlloc, "alloc")))
	poll.UntilCtx(ctx, t, "the stores refuse the old alloc token", func() bool {
		_, err := st.ReserveSegment(ctx, withToken(&seqsvrv1.ReserveSegmentRequest{Tag: "none", Size: 1}, secAllocTok))
		return connect.CodeOf(err) == connect.CodeUnauthenticated
	})
	// A new tag: the allocsvr has no segment of it and must reserve one
	// from the store, which it can only with the rotated token.
	if _, err := st.CreateTag(ctx, withToken(&seqsvrv1.CreateTagRequest{Tag: "rotated", Step: 10}, secAdminTok)); err != nil {
		t.Fatal(err)
	}
	poll.UntilCtx(ctx, t, "the allocsvr reserves a segment with the rotated store token", func() bool {
		_, err := al.NextIDs(ctx, withToken(&seqsvrv1.NextIDsRequest{Tag: "rotated", Count: 1}, secNewTok))
		return err == nil
	})
	if !s.alloc.Running() {
		t.Fatal("the allocsvr exited")
	}
}
