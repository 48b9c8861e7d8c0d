package deploytest

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// TestMain builds storesvr and allocsvr once for the real-cluster test.
func TestMain(m *testing.M) {
	os.Exit(launchtest.Main(m))
}

// neverExposed are names Prometheus makes itself, not the processes, and
// names of a secure cluster only: the certificates' expiry, which
// cmd/allocsvr's TestOperationsMetrics reads on one.
var neverExposed = map[string]bool{"up": true, "seqsvr_tls_cert_expiry_timestamp_seconds": true}

// usedNames maps every metric name the dashboard and the alert rules use
// to the file that uses it.
func usedNames(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..", "..", "deploy")
	used := map[string]string{}
	for _, f := range []struct {
		path  string
		exprs func(*os.File) ([]string, error)
	}{
		{filepath.Join(root, "grafana", "seqsvr.json"), func(r *os.File) ([]string, error) { return DashboardExprs(r) }},
		{filepath.Join(root, "prometheus", "alerts.yml"), func(r *os.File) ([]string, error) { return RuleExprs(r) }},
	} {
		r, err := os.Open(f.path)
		if err != nil {
			t.Fatal(err)
		}
		exprs, err := f.exprs(r)
		r.Close()
		if err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
		if len(exprs) < 5 {
			t.Fatalf("%s: only %d expressions read", f.path, len(exprs))
		}
		for _, e := range exprs {
			names := MetricNames(e)
			if len(names) == 0 {
				t.Errorf("%s: no metric in %q", f.path, e)
			}
			for _, n := range names {
				used[n] = filepath.Base(f.path)
			}
		}
	}
	return used
}

// TestDashboardAndAlertMetricsExist starts a 3-store, 2-allocsvr cluster,
// drives every kind of traffic (some series appear only once used: a
// leader's, a follower's, a loaded tag's, a per-key section's), and checks
// that every metric the dashboard and the rules name is on some process's
// /metrics.
func TestDashboardAndAlertMetricsExist(t *testing.T) {
	used := usedNames(t)
	c := launchtest.StartCluster(t, 3, 2, nil, nil)
	ctx := launchtest.Context(t, 2*time.Minute)

	if err := c.CreateTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "deploy", Step: 10}); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateSpace(ctx, &seqsvrv1.CreateSpaceRequest{Space: "inbox", KeyCount: 1000, SectionSize: 100, Step: 10}); err != nil {
		t.Fatal(err)
	}
	for _, a := range c.Allocs {
		ac, sc := c.AllocClient(a), c.SeqClient(a)
		// Past a few segments of 10, so reservations and their latency show.
		for i := 0; i < 5; i++ {
			if err := errs.Retry(ctx, launchtest.Retry(errs.AllocCall), func(context.Context, int) error {
				_, err := ac.NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "deploy", Count: 20}))
				return err
			}); err != nil {
				t.Fatalf("NextIDs: %v", err)
			}
		}
		if err := errs.Retry(ctx, launchtest.Retry(errs.SnowflakeCall), func(context.Context, int) error {
			_, err := ac.NextSnowflakeIDs(ctx, connect.NewRequest(&seqsvrv1.NextSnowflakeIDsRequest{Count: 3}))
			return err
		}); err != nil {
			t.Fatalf("NextSnowflakeIDs: %v", err)
		}
		// Keys of every section: both allocsvrs own some, so each serves and
		// forwards.
		keys := []uint64{}
		for k := uint64(0); k < 1000; k += 50 {
			keys = append(keys, k)
		}
		// A new space reaches an allocsvr's routing table with its next
		// heartbeat: not_found until then.
		var seqErr error
		poll.UntilCtx(ctx, t, "NextSeqs to answer", func() bool {
			seqErr = errs.Retry(ctx, launchtest.Retry(errs.AllocCall), func(context.Context, int) error {
				_, err := sc.NextSeqs(ctx, connect.NewRequest(&seqsvrv1.NextSeqsRequest{Space: "inbox", Keys: keys}))
				return err
			})
			return connect.CodeOf(seqErr) != connect.CodeNotFound
		})
		if seqErr != nil {
			t.Fatalf("NextSeqs: %v", seqErr)
		}
		// The Leaf API goes through the HTTP/1.1 front.
		res, err := http.Get(a.URL() + "/api/segment/get/deploy")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}

	exposed := map[string]bool{}
	// Some series appear only after their first sample (raft's summaries,
	// the snowflake lease renewal every few seconds): poll until every
	// name is there, or the deadline names what is not.
	for {
		for _, p := range c.All() {
			res, err := http.Get(p.URL() + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			err = Exposed(res.Body, exposed)
			res.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		var missing []string
		for n, file := range used {
			if !exposed[n] && !neverExposed[n] {
				missing = append(missing, n+" ("+file+")")
			}
		}
		if len(missing) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			sort.Strings(missing)
			t.Fatalf("on no process's /metrics: %v", missing)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Logf("%d metric names used by deploy/grafana and deploy/prometheus, all exposed", len(used))

	// The lease metric the SeqsvrSeqLeaseLapsing alert reads: a live
	// allocsvr's lease has time left.
	for _, a := range c.Allocs {
		if v, ok := launchtest.Metric(t, a.URL(), "seqsvr_seq_lease_left_seconds"); !ok || v <= 0 {
			t.Errorf("%s: seqsvr_seq_lease_left_seconds %v (present %v), want > 0 on a live allocsvr", a.Name, v, ok)
		}
	}
}
