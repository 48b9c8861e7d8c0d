package deploy

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestDashboard checks the Grafana dashboard's shape: it decodes strictly
// into the fields it uses, every panel queries the ${datasource} variable
// with at least one expression, ids are unique and panels fit the 24-column
// grid. That every metric it names exists is cmd/internal/deploytest's
// test, against a real cluster.
func TestDashboard(t *testing.T) {
	type target struct {
		RefID        string `json:"refId"`
		Datasource   struct{ Type, UID string }
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
	}
	type panel struct {
		ID          int    `json:"id"`
		Type        string `json:"type"`
		Title       string `json:"title"`
		Description string `json:"description"`
		Collapsed   bool   `json:"collapsed"`
		Datasource  struct{ Type, UID string }
		GridPos     struct{ H, W, X, Y int }
		FieldConfig json.RawMessage `json:"fieldConfig"`
		Options     json.RawMessage `json:"options"`
		Targets     []target        `json:"targets"`
		Panels      []panel         `json:"panels"`
	}
	var d struct {
		UID, Title, Description, Timezone, Refresh string
		Tags                                       []string
		SchemaVersion                              int  `json:"schemaVersion"`
		Version                                    int  `json:"version"`
		Editable                                   bool `json:"editable"`
		GraphTooltip                               int  `json:"graphTooltip"`
		Time                                       struct{ From, To string }
		Templating                                 struct {
			List []struct {
				Name, Type, Query, Label string
				Current                  struct{}
			}
		}
		Annotations struct{ List []struct{} }
		Panels      []panel
	}
	b, err := os.ReadFile("grafana/seqsvr.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("seqsvr.json: %v", err)
	}
	if d.UID == "" || d.Title == "" || len(d.Templating.List) != 1 || d.Templating.List[0].Name != "datasource" || d.Templating.List[0].Query != "prometheus" {
		t.Fatalf("want a uid, a title and one Prometheus datasource variable: %+v", d.Templating)
	}
	ids := map[int]bool{}
	queries := 0
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos.X+p.GridPos.W > 24 || p.GridPos.W <= 0 || p.GridPos.H <= 0 {
			t.Errorf("panel %q: gridPos %+v", p.Title, p.GridPos)
		}
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" || len(p.Targets) == 0 {
			t.Errorf("panel %q: datasource %q, %d targets", p.Title, p.Datasource.UID, len(p.Targets))
		}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" || tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q target %s: %+v", p.Title, tg.RefID, tg)
			}
			queries++
		}
	}
	// The list of what the dashboard shows, by the metric that
	// shows it.
	for _, m := range []string{
		"raft_leader_lastContact_count", "raft_state_leader", "raft_commitTime", "raft_boltdb_storeLogs",
		"seqsvr_segment_loads_total", "seqsvr_segment_buffer_remaining", "seqsvr_snowflake_fenced",
		"seqsvr_snowflake_clock_offset_ms", "seqsvr_seq_sections_owned", "seqsvr_seq_forwards_total",
		"rpc_server_handled_total", `rpc_code!=\"ok\"`,
	} {
		if !bytes.Contains(b, []byte(m)) {
			t.Errorf("the dashboard does not show %s", m)
		}
	}
	t.Logf("%d panels, %d queries", len(d.Panels), queries)
}
