package deploy

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite kubernetes/monitoring/prometheusrule.yaml from prometheus/alerts.yml")

const prometheusRulePath = "kubernetes/monitoring/prometheusrule.yaml"

// prometheusRule is the PrometheusRule of alerts.yml: its groups, as
// written (comments kept), under spec.
func prometheusRule(alerts []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`# Generated from deploy/prometheus/alerts.yml, the one source of the
# rules: edit that file, then run
#   (cd deploy && go test -run TestPrometheusRule -update .)
# (TestPrometheusRule fails while the two differ). Add the labels your
# Prometheus's ruleSelector matches.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: seqsvr
  namespace: seqsvr
  labels:
    app.kubernetes.io/part-of: seqsvr
spec:
`)
	for _, l := range strings.SplitAfter(string(alerts), "\n") {
		if strings.TrimSpace(l) != "" {
			b.WriteString("  ")
		}
		b.WriteString(l)
	}
	return b.Bytes()
}

// TestPrometheusRule: the PrometheusRule manifest is alerts.yml under
// spec, byte for byte, and decodes as one (strictly, with every rule).
func TestPrometheusRule(t *testing.T) {
	alerts, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	want := prometheusRule(alerts)
	if *update {
		if err := os.WriteFile(prometheusRulePath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(prometheusRulePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from prometheus/alerts.yml: run (cd deploy && go test -run TestPrometheusRule -update .)", prometheusRulePath)
	}
	m := readManifests(t)
	if len(m.rules) != 1 {
		t.Fatalf("%d PrometheusRules, want 1", len(m.rules))
	}
	n := 0
	for _, g := range m.rules[0].Spec.Groups {
		n += len(g.Rules)
	}
	if want := len(readRules(t)); n != want {
		t.Errorf("the PrometheusRule has %d rules, alerts.yml %d", n, want)
	}
}
