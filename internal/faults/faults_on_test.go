//go:build faults

package faults

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestParseBugs(t *testing.T) {
	got := parseBugs(" stale-reads, ,no-self-fence ")
	if !got[BugStaleReads] || !got[BugNoSelfFence] || len(got) != 2 {
		t.Fatalf("parseBugs = %v", got)
	}
}

func TestAdminClock(t *testing.T) {
	t.Cleanup(func() { SetClockOffset(0) })
	h := AdminHandler()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/debug/faults/clock?offset_ms=-1500", nil))
	if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != "-1500" {
		t.Fatalf("set: %d %q", rec.Code, rec.Body.String())
	}
	if d := time.Until(Now()); d > -1400*time.Millisecond || d < -1600*time.Millisecond {
		t.Fatalf("Now is %v from time.Now, want about -1.5s", d)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/debug/faults/clock?offset_ms=soon", nil))
	if rec.Code != http.StatusBadRequest || ClockOffset() != -1500*time.Millisecond {
		t.Fatalf("bad offset: %d, offset now %v", rec.Code, ClockOffset())
	}
}
