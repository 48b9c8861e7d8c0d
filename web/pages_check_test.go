package web_test

// What the status pages showed, checked against the cluster.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
)

type storeView struct {
	Node      string            `json:"node"`
	Cards     map[string]string `json:"cards"`
	LeaderRow string            `json:"leaderRow"`
	Members   []struct {
		ID, Role, Suffrage, Term, Commit, Applied, HTTPAddr string
	} `json:"members"`
	Tags []struct {
		Tag, MaxID, Step, Description string
	} `json:"tags"`
	Spaces []struct {
		Space, KeyCount, SectionSize, Sections string
	} `json:"spaces"`
	Routing []struct {
		Space    string `json:"space"`
		Note     string `json:"note"`
		Sections []struct {
			Range, Owner, Lease string
		} `json:"sections"`
	} `json:"routing"`
}

type allocView struct {
	Node  string `json:"node"`
	Error string `json:"error"`
	Tags  []struct {
		Tag           string
		Current, Next *struct{ First, Last, Remaining, Pct string }
		Position      string
		Step, Served  string
		Rate          string
		LastRefill    string
	} `json:"tags"`
	Snowflake struct{ State, WorkerID, LeaseLeft, ClockOffset string } `json:"snowflake"`
	Seq       struct {
		Lease  string
		Spaces []struct{ Space, Owned, Ranges string }
	} `json:"seq"`
}

type storeResult struct {
	NoTokenError       string      `json:"noTokenError"`
	NoTokenFieldMarked bool        `json:"noTokenFieldMarked"`
	WithClient         storeView   `json:"withClient"`
	WithAlloc          storeView   `json:"withAlloc"`
	SessionToken       string      `json:"sessionToken"`
	TokenAfterReload   string      `json:"tokenAfterReload"`
	Others             []storeView `json:"others"`
}

type allocResult struct {
	Shown        allocView `json:"shown"`
	AfterTraffic allocView `json:"afterTraffic"`
	Served       int       `json:"served"`
	ChartPoints  int       `json:"chartPoints"`
}

type pagesResult struct {
	Store           storeResult            `json:"store"`
	Allocs          map[string]allocResult `json:"allocs"`
	ConsoleErrors   []string               `json:"consoleErrors"`
	RequestFailures []string               `json:"requestFailures"`
}

func checkStorePage(t *testing.T, c *launch.Cluster, r storeResult, before, after truth, allocToken string) {
	t.Helper()
	if r.NoTokenError != "unauthenticated" || !r.NoTokenFieldMarked {
		t.Errorf("store page without a token: banner %q, field marked %v; want unauthenticated, marked", r.NoTokenError, r.NoTokenFieldMarked)
	}
	v := r.WithClient
	// Roles and terms are exact unless an election happened while the
	// page was read (2 shared cores, a browser starting): then each
	// figure must lie between the two truths and the page must still be
	// consistent with itself.
	stable := before.leader == after.leader && termsEqual(before, after)
	if !stable {
		t.Logf("an election happened during the store phase (leader %q then %q): checking ranges only", before.leader, after.leader)
	}
	if v.Node != "s1" || v.Cards["leader"] != v.LeaderRow || (stable && v.LeaderRow != before.leader) ||
		(!stable && v.LeaderRow != before.leader && v.LeaderRow != after.leader) {
		t.Errorf("store page: node %q, leader card %q, leader row %q; cluster leader %q (then %q)", v.Node, v.Cards["leader"], v.LeaderRow, before.leader, after.leader)
	}
	if len(v.Members) != len(c.Stores) {
		t.Fatalf("store page shows %d members, want %d: %+v", len(v.Members), len(c.Stores), v.Members)
	}
	leaders := 0
	for _, m := range v.Members {
		b, a := before.members[m.ID], after.members[m.ID]
		if b == nil {
			t.Errorf("store page shows unknown member %q", m.ID)
			continue
		}
		if m.Role == "leader" {
			leaders++
		}
		if want := ownState(b, m.ID); stable && m.Role != want {
			t.Errorf("member %s: role %q, want %q", m.ID, m.Role, want)
		}
		if m.Suffrage != "voter" {
			t.Errorf("member %s: suffrage %q, want voter", m.ID, m.Suffrage)
		}
		between(t, "member "+m.ID+" term", m.Term, b.GetTerm(), a.GetTerm())
		between(t, "member "+m.ID+" commit index", m.Commit, b.GetCommitIndex(), a.GetCommitIndex())
		between(t, "member "+m.ID+" applied index", m.Applied, b.GetAppliedIndex(), a.GetAppliedIndex())
	}
	if stable && leaders != 1 {
		t.Errorf("store page shows %d leaders: %+v", leaders, v.Members)
	}
	s1b, s1a := before.members["s1"], after.members["s1"]
	between(t, "term card", v.Cards["term"], s1b.GetTerm(), s1a.GetTerm())
	between(t, "commit index card", v.Cards["commit index"], s1b.GetCommitIndex(), s1a.GetCommitIndex())
	between(t, "applied index card", v.Cards["applied index"], s1b.GetAppliedIndex(), s1a.GetAppliedIndex())
	tagShown := false
	for _, tg := range v.Tags {
		if tg.Tag == testTag {
			tagShown = true
			if tg.MaxID != itoa(before.tag.GetMaxId()) || tg.Step != "1000" || tg.Description != "browser test" {
				t.Errorf("tag row %+v, want max_id %d step 1000", tg, before.tag.GetMaxId())
			}
		}
	}
	if !tagShown {
		t.Errorf("store page does not show tag %s: %+v", testTag, v.Tags)
	}
	if len(v.Spaces) != 1 || v.Spaces[0].Space != testSpace || v.Spaces[0].KeyCount != "1000" || v.Spaces[0].SectionSize != "100" || v.Spaces[0].Sections != "10" {
		t.Errorf("spaces shown %+v, want %s with 1000 keys in 10 sections of 100", v.Spaces, testSpace)
	}
	// GetRouting needs role alloc: the client token's page says so.
	if len(v.Routing) != 1 || !strings.Contains(v.Routing[0].Note, "PermissionDenied") {
		t.Errorf("routing with a client token: %+v, want a permission_denied note", v.Routing)
	}
	w := r.WithAlloc
	if len(w.Routing) != 1 || w.Routing[0].Note != "" {
		t.Fatalf("routing with an alloc token: %+v", w.Routing)
	}
	var want, wantAfter, got []string
	for _, s := range before.routing.GetSections() {
		want = append(want, fmt.Sprintf("%d-%d %s", s.GetFirstSection(), s.GetLastSection(), s.GetOwner()))
	}
	for _, s := range after.routing.GetSections() {
		wantAfter = append(wantAfter, fmt.Sprintf("%d-%d %s", s.GetFirstSection(), s.GetLastSection(), s.GetOwner()))
	}
	for _, s := range w.Routing[0].Sections {
		got = append(got, s.Range+" "+s.Owner)
		if !strings.HasSuffix(s.Lease, " left") {
			t.Errorf("section %s lease shown as %q", s.Range, s.Lease)
		}
	}
	// Sections move when an allocsvr's lease lapses (an election long
	// enough): then the page may show either table.
	if !slices.Equal(got, want) && !slices.Equal(got, wantAfter) {
		t.Errorf("routing shown %q, want %q (or, after a move, %q)", got, want, wantAfter)
	}
	// The other members' pages: their own name, the same members and tag.
	if len(r.Others) != len(c.Stores)-1 {
		t.Fatalf("%d other store pages read, want %d", len(r.Others), len(c.Stores)-1)
	}
	for i, o := range r.Others {
		if want := c.Stores[i+1].NodeID; o.Node != want || len(o.Members) != len(c.Stores) || len(o.Tags) != 1 || o.Tags[0].MaxID != itoa(after.tag.GetMaxId()) {
			t.Errorf("store page of %s: node %q, %d members, tags %+v (max_id %d)", want, o.Node, len(o.Members), o.Tags, after.tag.GetMaxId())
		}
	}
	if r.SessionToken != allocToken || r.TokenAfterReload != r.SessionToken {
		t.Errorf("token in session storage %q, after reload %q", r.SessionToken, r.TokenAfterReload)
	}
}

// checkBrowserErrors fails on any console error and any request the
// browser dropped, except drops for ERR_NETWORK_CHANGED: Chromium aborts
// requests in flight when the machine's network configuration changes,
// which other tests running beside this one do (network namespaces).
func checkBrowserErrors(t *testing.T, console, failed []string) {
	t.Helper()
	for _, f := range failed {
		if !strings.HasSuffix(f, "net::ERR_NETWORK_CHANGED") {
			t.Errorf("the browser dropped a request: %s", f)
		} else {
			t.Logf("tolerated: %s", f)
		}
	}
	for _, e := range console {
		if !strings.Contains(e, "net::ERR_NETWORK_CHANGED") {
			t.Errorf("console error: %s", e)
		}
	}
}

func termsEqual(a, b truth) bool {
	for id, st := range a.members {
		if b.members[id].GetTerm() != st.GetTerm() {
			return false
		}
	}
	return true
}

// ownState is member id's role as it sees itself.
func ownState(st *seqsvrv1.ClusterStatusResponse, id string) string {
	for _, m := range st.GetMembers() {
		if m.GetId() == id {
			return m.GetState()
		}
	}
	return ""
}

// between checks that a figure the page showed lies between the truth
// read before and after the page read it (the indexes move with every
// heartbeat the allocsvrs write).
func between(t *testing.T, what, shown string, lo, hi uint64) {
	t.Helper()
	v, err := strconv.ParseUint(shown, 10, 64)
	if err != nil || v < lo || v > hi {
		t.Errorf("%s shown %q, want a number in [%d, %d]", what, shown, lo, hi)
	}
}

func checkAllocPage(t *testing.T, name string, r allocResult, before, after *seqsvrv1.StatusResponse) {
	t.Helper()
	v := r.Shown
	if v.Node != name || v.Error != "" {
		t.Errorf("%s page: node %q, error %q", name, v.Node, v.Error)
	}
	var want *seqsvrv1.TagStatus
	for _, ts := range before.GetTags() {
		if ts.GetTag() == testTag {
			want = ts
		}
	}
	if want == nil || len(v.Tags) != 1 || v.Tags[0].Tag != testTag || v.Tags[0].Current == nil {
		t.Fatalf("%s page tags %+v; allocsvr has %v", name, v.Tags, before.GetTags())
	}
	got, cur := v.Tags[0], want.GetCurrent()
	if got.Current.First != itoa(cur.GetFirst()) || got.Current.Last != itoa(cur.GetLast()) || got.Current.Remaining != itoa(cur.GetRemaining()) ||
		got.Position != itoa(want.GetPosition()) || got.Step != itoa(want.GetStep()) || got.Served != itoa(want.GetIdsServed()) {
		t.Errorf("%s page shows tag %+v current %+v; allocsvr: %v", name, got, *got.Current, want)
	}
	used := float64(cur.GetLast()-cur.GetFirst()+1-cur.GetRemaining()) * 100 / float64(cur.GetLast()-cur.GetFirst()+1)
	if wantPct := fmt.Sprintf("%.1f%% used", float64(int64(used*10))/10); got.Current.Pct != wantPct {
		t.Errorf("%s page: current buffer %q, want %q", name, got.Current.Pct, wantPct)
	}
	if got.LastRefill == "never" || got.LastRefill == "" {
		t.Errorf("%s page: last refill %q", name, got.LastRefill)
	}
	sf := before.GetSnowflake()
	if v.Snowflake.State != "serving" || v.Snowflake.WorkerID != itoa(sf.GetWorkerId()) || !strings.HasSuffix(v.Snowflake.ClockOffset, " ms") ||
		!strings.HasSuffix(v.Snowflake.LeaseLeft, "s") || sf.GetWorkerId() != after.GetSnowflake().GetWorkerId() {
		t.Errorf("%s page snowflake %+v; allocsvr %v", name, v.Snowflake, sf)
	}
	if len(v.Seq.Spaces) != 1 || v.Seq.Spaces[0].Space != testSpace || v.Seq.Spaces[0].Owned != itoa(before.GetSeq().GetSpaces()[0].GetSectionsOwned()) ||
		v.Seq.Spaces[0].Ranges == "none" || !strings.HasSuffix(v.Seq.Lease, " left") {
		t.Errorf("%s page per-key sections %+v; allocsvr %v", name, v.Seq, before.GetSeq())
	}
	a := r.AfterTraffic.Tags
	if r.Served == 0 || len(a) != 1 || !strings.HasSuffix(a[0].Rate, " IDs/s") || r.ChartPoints < 2 {
		t.Errorf("%s page after %d IDs: rate %+v, chart points %d", name, r.Served, a, r.ChartPoints)
	}
	if n, _ := strconv.ParseInt(a[0].Served, 10, 64); n < want.GetIdsServed()+int64(r.Served) {
		t.Errorf("%s page: served %s after %d more IDs, was %d", name, a[0].Served, r.Served, want.GetIdsServed())
	}
}
