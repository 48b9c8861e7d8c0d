package nemesis

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// A safety margin is a configured duration that stands between a fault
// and a broken guarantee: a fence margin, a lease, a clock tolerance. An
// aimed nemesis sizes its fault by the margin, about 10% inside it or
// 10% outside, instead of anywhere, because a mistake that uses part of
// a margin only shows when a fault lands in the part it gave away.
//
// Inside, every guarantee must hold. Outside, where the design claims to
// detect the fault, the process must detect it and stop serving what the
// fault would break (the checkers and the nemesis verify that); where it
// claims no detection, the nemesis aims inside only. docs/fault-injection.md
// lists each margin, its nemesis and its claim.

// The margins the aimed nemeses attack.
const (
	// MarginSnowflakeClock is --snowflake-max-clock-offset: the clock
	// offset between an allocsvr and the store leader that registration
	// tolerates. Outside it registration is refused (detected).
	MarginSnowflakeClock = "snowflake-clock-offset"
	// MarginSnowflakeFence is --snowflake-fence-margin: a holder stops
	// issuing that long before its worker lease ends, which covers the
	// store leader's clock stepping ahead of its own (fenceskew.go).
	MarginSnowflakeFence = "snowflake-fence-margin"
	// MarginSnowflakeTakeover is the store's takeover floor: a new holder
	// of a worker ID starts one lease TTL above the old holder's last
	// report, which covers everything the old holder may issue before its
	// fence (TTL minus --snowflake-fence-margin after that report).
	MarginSnowflakeTakeover = "snowflake-takeover-floor"
	// MarginSeqFence is --seq-fence-margin: an allocsvr stops serving
	// per-key sections that long before its lease ends, which covers the
	// store leader's clock running ahead of the allocsvr's.
	MarginSeqFence = "seq-fence-margin"
	// MarginRestoreLeaseWait is the restored cluster's wait for the lost
	// cluster's leases (the restore fence).
	MarginRestoreLeaseWait = "restore-lease-wait"
)

// Side is where an aimed fault landed against its margin.
type Side string

const (
	Inside  Side = "inside"
	Outside Side = "outside"
)

// PhaseMargin marks an aimed fault's margin event.
const PhaseMargin = "margin"

// AimFraction is how far inside or outside a margin an aimed fault lands.
const AimFraction = 0.10

// Aim is the fault size for side: limit shrunk or grown by AimFraction.
func Aim(limit time.Duration, side Side) time.Duration {
	if side == Outside {
		return limit + time.Duration(float64(limit)*AimFraction)
	}
	return limit - time.Duration(float64(limit)*AimFraction)
}

// Margin records that fault (on target) was aimed at margin on side, with
// a fault of size value against the margin's limit.
func (l *Log) Margin(fault, target, margin string, side Side, value, limit time.Duration) {
	l.add(fault, PhaseMargin, target, "%s %s: %v against %v", margin, side, value, limit)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.evs[len(l.evs)-1].Margin, l.evs[len(l.evs)-1].Side = margin, side
}

// What a process must refuse while a fault outside a detected margin
// lasts (Event.Refuses): the history kind it must not answer.
const (
	RefusesSnowflake = "snowflake"
)

// MarginRefused records a fault aimed outside a margin whose crossing the
// design detects: from since to now on the run clock, target must not
// have answered a call of kind refuses (the margin-claims checker).
func (l *Log) MarginRefused(fault, target, margin string, value, limit time.Duration, refuses string, since time.Duration) {
	l.add(fault, PhaseMargin, target, "%s %s: %v against %v; must refuse %s from %.3fs", margin, Outside, value, limit, refuses, since.Seconds())
	l.mu.Lock()
	defer l.mu.Unlock()
	e := &l.evs[len(l.evs)-1]
	e.Margin, e.Side, e.Refuses, e.End = margin, Outside, refuses, e.At
	e.At = since
}

// MarginHits counts the margin events of evs: margin -> side -> count.
func MarginHits(evs []Event) map[string]map[Side]int {
	out := map[string]map[Side]int{}
	for _, e := range evs {
		if e.Phase != PhaseMargin || e.Margin == "" {
			continue
		}
		if out[e.Margin] == nil {
			out[e.Margin] = map[Side]int{}
		}
		out[e.Margin][e.Side]++
	}
	return out
}

// FormatMarginHits renders hits as "name inside N outside M; ...", or
// "none".
func FormatMarginHits(hits map[string]map[Side]int) string {
	if len(hits) == 0 {
		return "none"
	}
	names := make([]string, 0, len(hits))
	for k := range hits {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s inside %d outside %d", n, hits[n][Inside], hits[n][Outside]))
	}
	return strings.Join(parts, "; ")
}
