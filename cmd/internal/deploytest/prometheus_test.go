package deploytest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/tlsconf"
)

// metricsToken is the scraper's token (role metrics) the test adds to the
// cluster's auth file.
const metricsToken = launchtest.ScraperToken

// TestPrometheusScrapesAndAlerts runs a real Prometheus (the Debian
// package's, which make test-packages installs for promtool) against a
// secure cluster of real processes (--auth-file, HTTPS, client
// certificates): it scrapes with a metrics-role token, as the
// ServiceMonitors do, and evaluates deploy/prometheus/alerts.yml with
// every for: cut to 1s. The per-tag series, which an anonymous scrape
// does not get, are in Prometheus; stopping two of the three storesvrs
// makes SeqsvrStoreNoLeader fire.
func TestPrometheusScrapesAndAlerts(t *testing.T) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (make test-packages installs the Debian package)")
	}
	dir := t.TempDir()
	sec, err := launch.NewSecurity(filepath.Join(dir, "sec"))
	if err != nil {
		t.Fatal(err)
	}
	launchtest.AddScraper(t, sec.AuthFile)
	c := launchtest.Start(t, launch.Options{Stores: 3, Allocs: 1, Security: sec})
	ctx := launchtest.Context(t, 4*time.Minute)

	if err := c.CreateTag(ctx, &seqsvrv1.CreateTagRequest{Tag: "prom", Step: 10}); err != nil {
		t.Fatal(err)
	}
	if err := errs.Retry(ctx, launchtest.Retry(errs.AllocCall), func(context.Context, int) error {
		_, err := c.AllocClient(c.Allocs[0]).NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "prom", Count: 5}))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Anonymous, the tag's series are hidden: the token is what shows them.
	anon := anonymousMetrics(t, sec, c.Allocs[0].URL())
	if strings.Contains(anon, `tag="prom"`) || !strings.Contains(anon, "seqsvr_segment_") {
		t.Fatalf("an anonymous scrape shows the tag's series, or no segment series at all")
	}

	base := startPrometheus(t, prom, dir, sec, c, cutFor)
	poll.UntilCtx(ctx, t, "the per-tag series scraped with the metrics token", func() bool {
		return len(promQuery(t, base, `seqsvr_segment_ids_served_total{job="allocsvr",tag="prom"}`)) > 0
	})
	poll.UntilCtx(ctx, t, "every target up", func() bool {
		return len(promQuery(t, base, `up == 1`)) == len(c.All())
	})
	// Until the leader's lease checks have two samples the rule sees no
	// leader (its `or up * 0`): it must settle inactive while one leads.
	poll.UntilCtx(ctx, t, "SeqsvrStoreNoLeader inactive with a leader", func() bool {
		return len(promQuery(t, base, `sum(rate(raft_leader_lastContact_count{job="storesvr"}[1m])) > 0`)) > 0 &&
			alertState(t, base, "SeqsvrStoreNoLeader") == ""
	})

	for _, s := range c.Stores[1:] {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	poll.UntilCtx(ctx, t, "SeqsvrStoreNoLeader firing", func() bool { return alertState(t, base, "SeqsvrStoreNoLeader") == "firing" })
}

func anonymousMetrics(t *testing.T, sec *launch.Security, base string) string {
	t.Helper()
	tc, err := tlsconf.Client(sec.CAFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: tc}, Timeout: 10 * time.Second}
	res, err := hc.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("anonymous /metrics: %s", res.Status)
	}
	return string(b)
}

// cutFor is alerts.yml with every for: cut to 1s.
func cutFor(rules []byte) []byte {
	return regexp.MustCompile(`(?m)^(\s+for: )\S+$`).ReplaceAll(rules, []byte("${1}1s"))
}

// startPrometheus writes a configuration scraping every process every
// second over HTTPS (the CA, the allocsvrs' client certificate, the
// metrics token) and alerts.yml as edit makes it, starts Prometheus and
// returns its URL once it is ready.
func startPrometheus(t *testing.T, bin, dir string, sec *launch.Security, c *launch.Cluster, edit func([]byte) []byte) string {
	t.Helper()
	rules, err := os.ReadFile(filepath.Join("..", "..", "..", "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	rules = edit(rules)
	tokenFile := filepath.Join(dir, "metrics.token")
	files := map[string]string{"alerts.yml": string(rules), "metrics.token": metricsToken + "\n"}
	var jobs strings.Builder
	for _, job := range []struct {
		name  string
		procs []*launch.Proc
	}{{"storesvr", c.Stores}, {"allocsvr", c.Allocs}} {
		var targets []string
		for _, p := range job.procs {
			targets = append(targets, fmt.Sprintf("%q", p.HTTPAddr))
		}
		fmt.Fprintf(&jobs, `  - job_name: %s
    scheme: https
    tls_config: {ca_file: %q, cert_file: %q, key_file: %q}
    authorization: {type: Bearer, credentials_file: %q}
    static_configs: [{targets: [%s]}]
`, job.name, sec.CAFile, sec.AllocCertFile, sec.AllocKeyFile, tokenFile, strings.Join(targets, ", "))
	}
	files["prometheus.yml"] = "global: {scrape_interval: 1s, evaluation_interval: 1s}\nrule_files: [alerts.yml]\nscrape_configs:\n" + jobs.String()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port, err := launch.FreePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logPath := filepath.Join(dir, "prometheus.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("prometheus log:\n%s", b)
		}
	})
	base := "http://" + addr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	poll.UntilCtx(ctx, t, "prometheus ready", func() bool {
		res, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	return base
}

// promQuery is the result of an instant query.
func promQuery(t *testing.T, base, q string) []json.RawMessage {
	t.Helper()
	var out struct {
		Status string
		Data   struct{ Result []json.RawMessage }
	}
	promGet(t, base+"/api/v1/query?query="+url.QueryEscape(q), &out)
	return out.Data.Result
}

// alertState is the state ("pending", "firing") of the alert named, ""
// when it is neither.
func alertState(t *testing.T, base, name string) string {
	t.Helper()
	var out struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string
				State  string
			}
		}
	}
	promGet(t, base+"/api/v1/alerts", &out)
	state := ""
	for _, a := range out.Data.Alerts {
		if a.Labels["alertname"] == name && state != "firing" {
			state = a.State
		}
	}
	return state
}

func promGet(t *testing.T, u string, out any) {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", u, res.Status, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("GET %s: %v: %s", u, err, b)
	}
}
