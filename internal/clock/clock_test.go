package clock

import (
	"testing"
	"time"

	"github.com/seqsvr/seqsvr/internal/clock/clocktest"
)

func TestSystemFollowsTime(t *testing.T) {
	before := time.Now()
	got := System().Now()
	if got.Before(before.Add(-time.Second)) || got.After(time.Now().Add(time.Second)) {
		t.Fatalf("System().Now() = %v, not near %v", got, before)
	}
}

func TestOr(t *testing.T) {
	if _, ok := Or(nil).(system); !ok {
		t.Fatal("Or(nil) is not the system clock")
	}
	f := clocktest.New(time.Unix(100, 0))
	if Or(f) != Clock(f) {
		t.Fatal("Or(c) did not keep c")
	}
	f.Sleep(time.Second)
	if f.Now() != time.Unix(101, 0) || f.Slept() != time.Second {
		t.Fatalf("fake clock at %v slept %v", f.Now(), f.Slept())
	}
}
