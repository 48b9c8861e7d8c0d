package nemesis

import (
	"testing"
	"time"
)

func TestAim(t *testing.T) {
	if got := Aim(time.Second, Inside); got != 900*time.Millisecond {
		t.Errorf("inside 1s = %v, want 900ms", got)
	}
	if got := Aim(500*time.Millisecond, Outside); got != 550*time.Millisecond {
		t.Errorf("outside 500ms = %v, want 550ms", got)
	}
}

func TestMarginHits(t *testing.T) {
	l := NewLog(time.Now(), nil)
	l.Inject("skewed-takeover", "a1", "x")
	l.Margin("skewed-takeover", "a1", MarginSnowflakeClock, Inside, 900*time.Millisecond, time.Second)
	l.Margin("skewed-takeover", "a1", MarginSnowflakeClock, Outside, 1100*time.Millisecond, time.Second)
	l.Margin("seq-fence", "s1", MarginSeqFence, Inside, 450*time.Millisecond, 500*time.Millisecond)
	hits := MarginHits(l.Events())
	if hits[MarginSnowflakeClock][Inside] != 1 || hits[MarginSnowflakeClock][Outside] != 1 || hits[MarginSeqFence][Inside] != 1 || len(hits) != 2 {
		t.Fatalf("hits = %v", hits)
	}
	want := "seq-fence-margin inside 1 outside 0; snowflake-clock-offset inside 1 outside 1"
	if got := FormatMarginHits(hits); got != want {
		t.Errorf("FormatMarginHits = %q, want %q", got, want)
	}
	if got := FormatMarginHits(nil); got != "none" {
		t.Errorf("FormatMarginHits(nil) = %q", got)
	}
	if n := l.Injected("skewed-takeover"); n != 1 {
		t.Errorf("margin events counted as injections: %d", n)
	}
}
