package bench

import (
	"math"
	"testing"
)

// ratioStats: the geometric mean and its Student's-t interval, checked
// against values worked out by hand.
func TestRatioStats(t *testing.T) {
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-4*want }

	st := ratioStats([]float64{1, 1, 1})
	if st.geo != 1 || st.lo != 1 || st.hi != 1 || st.med != 1 {
		t.Errorf("all ones: %+v", st)
	}
	// ln 0.5 = -0.6931, ln 2 = 0.6931: mean 0, sd 0.9803, se 0.6931,
	// t(1) = 12.706: interval exp(±8.807).
	st = ratioStats([]float64{0.5, 2})
	if !near(st.geo, 1) || !near(st.med, 1.25) || !near(st.lo, math.Exp(-12.706*0.693147)) || !near(st.hi, math.Exp(12.706*0.693147)) {
		t.Errorf("0.5, 2: %+v", st)
	}
	// 0.9, 0.95, 1.0, 1.05: geometric mean 0.973394; logs' sd 0.066342,
	// se 0.033171, t(3) = 3.182: half-width 0.105550.
	st = ratioStats([]float64{1.05, 0.9, 1.0, 0.95})
	if !near(st.geo, 0.973394) || !near(st.med, 0.975) ||
		!near(st.lo, 0.973394*math.Exp(-0.105550)) || !near(st.hi, 0.973394*math.Exp(0.105550)) {
		t.Errorf("0.9..1.05: %+v", st)
	}
	if tQuantile95(20) != 2.086 || tQuantile95(35) != 2.042 || tQuantile95(1000) != 1.980 {
		t.Error("t quantiles")
	}
}
