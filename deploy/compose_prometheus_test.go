package deploy

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
)

// The compose cluster's tokens for runComposePrometheus, one per role.
const (
	cpAdminTok   = "compose-admin-token-0123456789"
	cpAllocTok   = "compose-alloc-token-0123456789"
	cpClientTok  = "compose-client-token-012345678"
	cpMetricsTok = "compose-metrics-token-01234567"
)

// runComposePrometheus runs compose.yaml's services with --auth-file set
// (SEQSVR_AUTH_FILE, the members' SEQSVR_JOIN_TOKEN_FILE, the allocsvrs'
// SEQSVR_STORE_TOKEN_FILE, from a mounted directory) and a real
// Prometheus on the host (the Debian package make test-packages
// installs), which scrapes every service with a metrics-role token and
// evaluates deploy/prometheus/alerts.yml with every for: cut to 1s. The
// per-tag series, hidden from an anonymous scrape, are in Prometheus;
// stopping two of the three storesvrs makes SeqsvrStoreNoLeader fire.
func runComposePrometheus(t *testing.T, e *engine, image string) {
	prom, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("SEQSVR_IMAGE") != "" {
			t.Fatal("prometheus is missing (apt-get install prometheus; make test-packages does)")
		}
		t.Skip("prometheus is not installed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	authDir := t.TempDir()
	if err := os.Chmod(authDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{
		"auth.json": fmt.Sprintf(`[{"name":"ops","token":%q,"roles":["admin"]},{"name":"allocsvr","token":%q,"roles":["alloc"]},`+
			`{"name":"apps","token":%q,"roles":["client"]},{"name":"prometheus","token":%q,"roles":["metrics"]}]`,
			cpAdminTok, cpAllocTok, cpClientTok, cpMetricsTok),
		"admin-token": cpAdminTok + "\n", "alloc-token": cpAllocTok + "\n",
	} {
		if err := os.WriteFile(filepath.Join(authDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	prefix := fmt.Sprintf("seqsvr-prom-%d", os.Getpid())
	names, urls := startCompose(t, e, image, prefix, func(_ string, s composeService) []string {
		args := []string{"-v", authDir + ":/etc/seqsvr/auth:ro", "-e", "SEQSVR_AUTH_FILE=/etc/seqsvr/auth/auth.json"}
		if s.Command[0] == "storesvr" {
			return append(args, "-e", "SEQSVR_JOIN_TOKEN_FILE=/etc/seqsvr/auth/admin-token")
		}
		return append(args, "-e", "SEQSVR_STORE_TOKEN_FILE=/etc/seqsvr/auth/alloc-token")
	})
	c := readCompose(t)
	targets := map[string][]string{}
	var stores, allocs []string
	for _, n := range names {
		job := c.Services[n].Command[0]
		targets[job] = append(targets[job], strings.TrimPrefix(urls[n], "http://"))
		if job == "storesvr" {
			stores = append(stores, n)
		} else {
			allocs = append(allocs, n)
		}
	}
	postAuthOK(ctx, t, urls[stores[0]]+"/seqsvr.v1.StoreService/CreateTag", `{"tag":"prom"}`, cpAdminTok)
	postAuthOK(ctx, t, urls[allocs[0]]+"/seqsvr.v1.AllocService/NextIDs", `{"tag":"prom","count":5}`, cpClientTok)
	if anon := httpGet(t, urls[allocs[0]]+"/metrics"); strings.Contains(anon, `tag="prom"`) || !strings.Contains(anon, "seqsvr_segment_") {
		t.Fatal("an anonymous scrape shows the tag's series, or no segment series at all")
	}

	base := startHostPrometheus(t, prom, targets)
	waitProm := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			select {
			case <-ctx.Done():
				t.Fatalf("timed out waiting for %s", what)
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
	waitProm("the per-tag series scraped with the metrics token", func() bool {
		return len(promResult(t, base, `seqsvr_segment_ids_served_total{job="allocsvr",tag="prom"}`)) > 0
	})
	waitProm("SeqsvrStoreNoLeader inactive with a leader", func() bool {
		return len(promResult(t, base, `sum(rate(raft_leader_lastContact_count{job="storesvr"}[1m])) > 0`)) > 0 &&
			promAlertState(t, base, "SeqsvrStoreNoLeader") == ""
	})
	for _, n := range stores[1:] {
		e.must(2*time.Minute, "stop", "-t", "2", prefix+"-"+n)
	}
	waitProm("SeqsvrStoreNoLeader firing", func() bool { return promAlertState(t, base, "SeqsvrStoreNoLeader") == "firing" })
	t.Logf("compose with --auth-file: Prometheus scraped the per-tag series with the metrics token; SeqsvrStoreNoLeader fired with %v stopped", stores[1:])
}

// postAuthOK is postOK with a bearer token.
func postAuthOK(ctx context.Context, t *testing.T, u, body, token string) {
	t.Helper()
	last := ""
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
			last = fmt.Sprintf("%s: %s", res.Status, b)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("POST %s %s: %s", u, body, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func httpGet(t *testing.T, u string) string {
	t.Helper()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", u, res.Status)
	}
	return string(b)
}

// startHostPrometheus runs Prometheus on the host, scraping each job's
// targets every second with the metrics token, with alerts.yml's for:
// cut to 1s, and returns its URL once it is ready.
func startHostPrometheus(t *testing.T, bin string, targets map[string][]string) string {
	t.Helper()
	dir := t.TempDir()
	rules, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	rules = regexp.MustCompile(`(?m)^(\s+for: )\S+$`).ReplaceAll(rules, []byte("${1}1s"))
	var cfg strings.Builder
	cfg.WriteString("global: {scrape_interval: 1s, evaluation_interval: 1s}\nrule_files: [alerts.yml]\nscrape_configs:\n")
	for _, job := range []string{"storesvr", "allocsvr"} {
		var ts []string
		for _, a := range targets[job] {
			ts = append(ts, fmt.Sprintf("%q", a))
		}
		fmt.Fprintf(&cfg, "  - job_name: %s\n    authorization: {type: Bearer, credentials_file: metrics.token}\n    static_configs: [{targets: [%s]}]\n",
			job, strings.Join(ts, ", "))
	}
	for name, body := range map[string]string{"alerts.yml": string(rules), "metrics.token": cpMetricsTok + "\n", "prometheus.yml": cfg.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := freeAddr(t)
	logPath := filepath.Join(dir, "prometheus.log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+filepath.Join(dir, "prometheus.yml"), "--storage.tsdb.path="+filepath.Join(dir, "tsdb"), "--web.listen-address="+addr)
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
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := http.Get(base + "/-/ready")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func promResult(t *testing.T, base, q string) []json.RawMessage {
	t.Helper()
	var out struct {
		Data struct{ Result []json.RawMessage }
	}
	if err := json.Unmarshal([]byte(httpGet(t, base+"/api/v1/query?query="+url.QueryEscape(q))), &out); err != nil {
		t.Fatal(err)
	}
	return out.Data.Result
}

// promAlertState is the state of the alert named ("pending", "firing"),
// "" when it is neither.
func promAlertState(t *testing.T, base, name string) string {
	t.Helper()
	var out struct {
		Data struct {
			Alerts []struct {
				Labels map[string]string
				State  string
			}
		}
	}
	if err := json.Unmarshal([]byte(httpGet(t, base+"/api/v1/alerts")), &out); err != nil {
		t.Fatal(err)
	}
	state := ""
	for _, a := range out.Data.Alerts {
		if a.Labels["alertname"] == name && state != "firing" {
			state = a.State
		}
	}
	return state
}
