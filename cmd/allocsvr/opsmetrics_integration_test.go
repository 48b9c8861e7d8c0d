package main

import (
	"crypto/tls"
	"fmt"
	"testing"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// TestOperationsMetrics reads, on a secure cluster of real processes, the
// metrics the alerts on certificates, readiness, lag, worker IDs and
// backups need: each certificate's NotAfter by use, each member ready and
// caught up, the allocsvr's worker ID counted against the layout's 1024,
// and the time of a backup on the member that answered it.
func TestOperationsMetrics(t *testing.T) {
	s := startSecure(t, 1)
	ctx := launchtest.Context(t, 60*time.Second)
	raftPair, err := tls.LoadX509KeyPair(s.raftCert, s.raftKey)
	if err != nil {
		t.Fatal(err)
	}
	metric := func(base, name string) float64 { return secMetric(t, s.withCert, base, name) }
	expiry := func(use string) string { return fmt.Sprintf(`seqsvr_tls_cert_expiry_timestamp_seconds{use=%q}`, use) }
	// tlstest issues certificates valid for a day.
	plausible := func(v float64) bool {
		return v > float64(time.Now().Add(time.Hour).Unix()) && v < float64(time.Now().Add(48*time.Hour).Unix())
	}
	for _, u := range s.storeURLs {
		if v := metric(u, expiry("raft")); v != float64(raftPair.Leaf.NotAfter.Unix()) {
			t.Errorf("%s: raft certificate expiry %v, want %d", u, v, raftPair.Leaf.NotAfter.Unix())
		}
		if v := metric(u, expiry("serving")); !plausible(v) {
			t.Errorf("%s: serving certificate expiry %v", u, v)
		}
		poll.UntilCtx(ctx, t, u+" ready and caught up", func() bool {
			return metric(u, "seqsvr_store_ready") == 1 && metric(u, "seqsvr_store_applied_index") >= metric(u, "seqsvr_store_commit_index") &&
				metric(u, "seqsvr_store_commit_index") > 0
		})
		if v := metric(u, "seqsvr_store_worker_ids_limit"); v != 1024 {
			t.Errorf("%s: worker ID limit %v, want 1024", u, v)
		}
		if v := metric(u, "seqsvr_store_last_backup_timestamp_seconds"); v != 0 {
			t.Errorf("%s: last backup %v before any backup", u, v)
		}
	}
	if v := metric(s.allocURL, expiry("serving")); !plausible(v) {
		t.Errorf("allocsvr serving certificate expiry %v", v)
	}
	poll.UntilCtx(ctx, t, "the allocsvr's worker ID counted", func() bool {
		return metric(s.storeURLs[0], "seqsvr_store_worker_ids_in_use") == 1
	})

	before := time.Now()
	st := seqsvrv1connect.NewStoreServiceClient(s.withCert, s.storeURLs[1])
	stream, err := st.Backup(ctx, withToken(&seqsvrv1.BackupRequest{}, secAdminTok))
	if err != nil {
		t.Fatal(err)
	}
	for stream.Receive() {
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	stream.Close()
	if v := metric(s.storeURLs[1], "seqsvr_store_last_backup_timestamp_seconds"); v < float64(before.Unix()) || v > float64(time.Now().Unix()+1) {
		t.Errorf("last backup %v, want between %d and now", v, before.Unix())
	}
}
