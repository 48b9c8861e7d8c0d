package harness

import (
	"strings"
	"testing"
)

func TestDisagreement(t *testing.T) {
	tags := []string{"a", "b"}
	same := map[string]map[string]int64{"s1": {"a": 1, "b": 2}, "s2": {"a": 1, "b": 2}, "s3": {"a": 1, "b": 2}}
	if d := disagreement(same, tags); d != "" {
		t.Fatalf("agreeing members: %q", d)
	}
	differ := map[string]map[string]int64{"s1": {"a": 1, "b": 4}, "s2": {"a": 1, "b": 2}, "s3": {"a": 1, "b": 2}}
	if d := disagreement(differ, tags); !strings.Contains(d, `tag "b"`) || !strings.Contains(d, "s1=4") || !strings.Contains(d, "s2=2") {
		t.Fatalf("differing value: %q", d)
	}
	missing := map[string]map[string]int64{"s1": {"a": 1, "b": 2}, "s2": {"a": 1}, "s3": {"a": 1, "b": 2}}
	if d := disagreement(missing, tags); !strings.Contains(d, "s2=none") {
		t.Fatalf("missing value: %q", d)
	}
}
