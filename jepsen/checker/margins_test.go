package checker

import (
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/history"
)

func TestMarginRefusals(t *testing.T) {
	rf := []Refusal{{Margin: "snowflake-clock-offset", Target: "a1t", Kind: history.Snowflake, From: time.Second, To: 3 * time.Second}}
	op := func(target string, call time.Duration, ok bool) *history.Op {
		return &history.Op{Kind: history.Snowflake, Target: target, Call: int64(call), Return: int64(call + time.Millisecond), OK: ok}
	}
	for _, tc := range []struct {
		name string
		ops  []*history.Op
		ok   bool
	}{
		{"refused inside the window", []*history.Op{op("a1t", 2*time.Second, false)}, true},
		{"answered outside the window", []*history.Op{op("a1t", 4*time.Second, true), op("a1t", 500*time.Millisecond, true)}, true},
		{"another target answered", []*history.Op{op("a1", 2*time.Second, true)}, true},
		{"answered inside the window", []*history.Op{op("a1t", 2*time.Second, false), op("a1t", 2500*time.Millisecond, true)}, false},
	} {
		if got := MarginRefusals(tc.ops, rf); got.OK != tc.ok {
			t.Errorf("%s: OK = %v, want %v (%s)", tc.name, got.OK, tc.ok, got.Detail)
		}
	}
	if got := MarginRefusals([]*history.Op{op("a1t", 2*time.Second, true)}, nil); !got.OK {
		t.Errorf("no refusals: %s", got.Detail)
	}
}
