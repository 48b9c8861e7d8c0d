//go:build hashicorpmetrics

package serve

import (
	"strings"
	"testing"

	compat "github.com/hashicorp/go-metrics/compat"
)

// raft emits through go-metrics/compat; with -tags hashicorpmetrics that
// must land in our registry as raft_* series.
func TestRaftMetricsReachRegistry(t *testing.T) {
	reg := NewRegistry()
	if err := InstallRaftMetrics(reg); err != nil {
		t.Fatal(err)
	}
	compat.IncrCounter([]string{"raft", "apply"}, 3)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		if mf.GetName() == "raft_apply" && mf.GetMetric()[0].GetCounter().GetValue() == 3 {
			return
		}
		if strings.HasPrefix(mf.GetName(), "raft") {
			names = append(names, mf.GetName())
		}
	}
	t.Fatalf("no raft_apply=3 series; raft series: %v", names)
}
