package deploytest

import (
	"slices"
	"strings"
	"testing"
)

func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (instance) (rate(raft_leader_lastContact_count{job="storesvr"}[1m]) > bool 0)`:    {"raft_leader_lastContact_count"},
		`(sum by (job) (rate(a_total{job="x"}[1m])) or sum by (job) (up{job="x"}) * 0) == 0`:      {"a_total", "up"},
		`b / clamp_min(rate(c_total{tag="a,b"}[5m]), 0.001) < 300 and on (job, instance) (d > 0)`: {"b", "c_total", "d"},
		`histogram_quantile(0.99, sum by (le) (rate(e_bucket[$__rate_interval])))`:                {"e_bucket"},
		`f{q="0.99"} / 9223372036854775807 > 1e-3`:                                                {"f"},
		`abs(g) > 800 unless ignoring (result) h offset 5m`:                                       {"g", "h"},
	} {
		if got := MetricNames(expr); !slices.Equal(got, want) {
			t.Errorf("MetricNames(%s) = %v, want %v", expr, got, want)
		}
	}
}

func TestRuleExprs(t *testing.T) {
	rules := `groups:
  - name: g
    rules:
      - alert: A
        expr: up == 0
        for: 1m
      - alert: B
        # comment
        expr: |
          (
            x
          )
          or y
        labels:
          severity: page
      - alert: C
        expr: 'z > 1'
`
	got, err := RuleExprs(strings.NewReader(rules))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"up == 0", " ( x ) or y", "z > 1"}
	if !slices.Equal(got, want) {
		t.Fatalf("RuleExprs = %q, want %q", got, want)
	}
}

func TestExposed(t *testing.T) {
	text := "# HELP a_total x\n# TYPE a_total counter\na_total{x=\"1\"} 3\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 2\nh_count 1\n# TYPE empty_total counter\nplain 1\n"
	got := map[string]bool{}
	if err := Exposed(strings.NewReader(text), got); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a_total", "h", "h_bucket", "h_sum", "h_count", "empty_total", "plain"} {
		if !got[n] {
			t.Errorf("%s not seen", n)
		}
	}
	if got["x"] || got["HELP"] {
		t.Errorf("label or comment taken for a name: %v", got)
	}
}
