package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// ruleFile is the part of a Prometheus rule file the tests read, decoded
// strictly: a misspelt key fails here before promtool sees it.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func readRules(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	readStrict(t, "prometheus/alerts.yml", &f)
	var out []rule
	for _, g := range f.Groups {
		out = append(out, g.Rules...)
	}
	return out
}

func readStrict(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// promtool is the path of promtool, failing the test when make test runs
// it (SEQSVR_IMAGE set: `make test-packages` installed it) and skipping
// a plain `go test` on a machine without it.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("SEQSVR_IMAGE") != "" {
			t.Fatal("promtool is missing (apt-get install prometheus; make test-packages does)")
		}
		t.Skip("promtool is not installed (make test installs it)")
	}
	return p
}

// Every one of these must be in alerts.yml.
var wantAlerts = []string{
	"SeqsvrStoreNoLeader", "SeqsvrStoreLeaderFlapping", "SeqsvrStoreFsyncSlow",
	"SeqsvrStoreDataDirNotWritable", "SeqsvrStoreMemberNotReady", "SeqsvrStoreMemberLagging",
	"SeqsvrBackupTooOld", "SeqsvrCertificateExpiring", "SeqsvrWorkerIDsRunningOut",
	"SeqsvrTagBuffersRunningDry", "SeqsvrSnowflakeFenced", "SeqsvrSnowflakeClockOffset",
	"SeqsvrSeqLeaseLapsing", "SeqsvrTagIDSpaceNearExhaustion", "SeqsvrAllocStoreUnreachable",
	"SeqsvrStoreFencedMembers",
}

// runbookBase is where every runbook_url points: an anchor of
// docs/alerts.md, one section per alert.
const runbookBase = "https://github.com/seqsvr/seqsvr/blob/main/docs/alerts.md#"

// markdownAnchors are the anchors GitHub makes of a Markdown file's
// headings: lower case, punctuation but - and _ dropped, spaces to -.
func markdownAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^a-z0-9 _-]`)
	for _, l := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(l, "#"); ok {
			h = strings.TrimLeft(h, "#")
			anchors[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(strings.TrimSpace(h)), ""), " ", "-")] = true
		}
	}
	return anchors
}

// staticAnnotations are the annotations alerts_test.yml leaves to
// TestAlertRules, which copies them from alerts.yml.
var staticAnnotations = []string{"description", "runbook_url"}

// TestAlertRulesHaveRunbooks: every alert has a summary, a description, a
// severity routing knows (critical or warning) and a runbook_url to its
// own section of docs/alerts.md, which must exist.
func TestAlertRulesHaveRunbooks(t *testing.T) {
	anchors := markdownAnchors(t, "../docs/alerts.md")
	have := map[string]bool{}
	for _, r := range readRules(t) {
		have[r.Alert] = true
		if r.Alert == "" {
			continue
		}
		for _, k := range []string{"summary", "description", "runbook_url"} {
			if strings.TrimSpace(r.Annotations[k]) == "" {
				t.Errorf("%s: no %s annotation", r.Alert, k)
			}
		}
		// They must not depend on the firing series.
		for _, k := range staticAnnotations {
			if strings.Contains(r.Annotations[k], "{{") {
				t.Errorf("%s: the %s annotation is templated; keep templates in summary", r.Alert, k)
			}
		}
		if s := r.Labels["severity"]; s != "critical" && s != "warning" {
			t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
		}
		anchor, ok := strings.CutPrefix(r.Annotations["runbook_url"], runbookBase)
		if !ok || anchor != strings.ToLower(r.Alert) || !anchors[anchor] {
			t.Errorf("%s: runbook_url %q, want %s%s, a heading of docs/alerts.md", r.Alert, r.Annotations["runbook_url"], runbookBase, strings.ToLower(r.Alert))
		}
		if _, ok := r.Annotations["runbook"]; ok {
			t.Errorf("%s: an inline runbook; the runbook is docs/alerts.md's section (runbook_url)", r.Alert)
		}
	}
	for _, a := range wantAlerts {
		if !have[a] {
			t.Errorf("alert %s is missing from alerts.yml", a)
		}
	}
}

// TestAlertRules runs promtool check rules and promtool test rules, and
// checks that alerts_test.yml has a case firing every alert.
func TestAlertRules(t *testing.T) {
	pt := promtool(t)
	if out, err := exec.Command(pt, "check", "rules", "prometheus/alerts.yml").CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	static := map[string]map[string]string{}
	for _, r := range readRules(t) {
		if r.Alert != "" {
			static[r.Alert] = map[string]string{}
			for _, k := range staticAnnotations {
				static[r.Alert][k] = r.Annotations[k]
			}
		}
	}
	b, err := os.ReadFile("prometheus/alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	var tests map[string]any
	if err := yaml.Unmarshal(b, &tests); err != nil {
		t.Fatal(err)
	}
	fired := map[string]bool{}
	for _, tc := range tests["tests"].([]any) {
		for _, art := range tc.(map[string]any)["alert_rule_test"].([]any) {
			art := art.(map[string]any)
			name := art["alertname"].(string)
			exp, _ := art["exp_alerts"].([]any)
			for _, e := range exp {
				e := e.(map[string]any)
				ann, _ := e["exp_annotations"].(map[string]any)
				if ann == nil {
					ann = map[string]any{}
					e["exp_annotations"] = ann
				}
				for k, v := range static[name] {
					ann[k] = v
				}
				fired[name] = true
			}
		}
	}
	for name := range static {
		if !fired[name] {
			t.Errorf("alerts_test.yml has no case that fires %s", name)
		}
	}
	// promtool resolves rule_files relative to the test file.
	dir := t.TempDir()
	out, err := yaml.Marshal(tests)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"alerts.yml": rules, "alerts_test.yml": out} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command(pt, "test", "rules", filepath.Join(dir, "alerts_test.yml")).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	} else {
		t.Logf("%s", out)
	}
}
