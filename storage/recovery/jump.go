package recovery

import (
	"fmt"
	"math"
	"time"
)

// The default jump duration: DefaultFactor x the state's age, at least
// DefaultMinOver.
const (
	DefaultFactor  = 2
	DefaultMinOver = time.Hour
)

// DefaultOver is the jump duration when the operator gave none: the lost
// cluster ran at most age past the state (age is the restore's start minus
// the backup's time, or minus the last entry a survivor applied), so twice
// that covers every counter that ran up to twice its recorded peak rate
// meanwhile; an hour at least covers young backups and clock error.
func DefaultOver(age time.Duration) time.Duration {
	return max(DefaultFactor*max(age, 0), DefaultMinOver)
}

// Jump is one counter's jump, as logged.
type Jump struct {
	Name       string        `json:"name"`  // tag, "tombstone t", "space/section N"
	Field      string        `json:"field"` // max_id or max_seq
	From       int64         `json:"from"`
	To         int64         `json:"to"`
	RatePerSec int64         `json:"rate_per_sec"`
	Over       time.Duration `json:"over"`
	Floor      int64         `json:"floor"`
	MinJump    int64         `json:"min_jump"`
	// Saturated: the jump reached 2^63-1; the counter is used up.
	Saturated bool `json:"saturated,omitempty"`
}

// String is the log line: "order: max_id 10400 -> 3610400 (rate 1000/s x 1h0m0s, floor 200000000, min 0)".
func (j Jump) String() string {
	s := fmt.Sprintf("%s: %s %d -> %d (rate %d/s x %s, floor %d, min %d)", j.Name, j.Field, j.From, j.To, j.RatePerSec, j.Over, j.Floor, j.MinJump)
	if j.Saturated {
		s += "; reached 2^63-1: this counter is used up"
	}
	return s
}

// Compute jumps a counter at from, whose peak rate is ratePerSec, over the
// duration over: from + max(rate x over, minJump, floor, 1), stopping at
// 2^63-1 (saturated) rather than wrapping.
func Compute(from, ratePerSec int64, over time.Duration, minJump, floor int64) (to int64, saturated bool) {
	if plantedRestoreNoJump() {
		return from, false
	}
	secs := int64((over + time.Second - 1) / time.Second)
	j := max(mulSat(max(ratePerSec, 0), secs), minJump, floor, 1)
	if from > math.MaxInt64-j {
		return math.MaxInt64, true
	}
	return from + j, false
}

func mulSat(a, b int64) int64 {
	if a == 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// floorOf is twice the larger of two segment sizes, saturating.
func floorOf(a, b int64) int64 { return mulSat(max(a, b), 2) }
