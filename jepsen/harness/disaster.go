package harness

import (
	"math"
	"time"

	"github.com/seqsvr/seqsvr/jepsen/checker"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

// disasterScenario is "disaster" (issue 22): under the segment, snowflake
// and per-key load, a backup every few seconds (the "backup" lane), and
// over and over (the "store" lane) the whole store destroyed and restored
// from the oldest backup of the current cluster with the default jump,
// then a quorum lost and the survivor recovered (nemesis/disaster.go).
// The checkers run over the history of every cluster: the uniqueness and
// per-key order checkers as they are, the store's linearizability split
// at each restore (checker.LinearizableAcross) and the burned-ID check
// excusing one jump per restore (jumpBounds).
func disasterScenario(d time.Duration) Config {
	return Config{Name: "disaster", Duration: d, Faults: []string{"backup", "disaster"}, SeqWorkers: 3,
		GapLo: 2 * time.Second, GapHi: 4 * time.Second}
}

// Disaster is the short disaster run of `go test`.
func Disaster(d time.Duration) Config { return disasterScenario(d) }

// restoreFloor is the smallest jump a restore makes of a tag: twice the
// stores' --max-segment-size (100000000 by default, which the harness
// keeps). A burned-ID hole is a few segments of at most allocMaxStep.
const restoreFloor = 2 * 100000000

// lostSpans are the restores and recoveries of a nemesis log, from the
// destruction to the restored cluster's heal (open to the end when it
// never healed).
func lostSpans(events []nemesis.Event) []checker.Span {
	var out []checker.Span
	open := map[string]time.Duration{}
	for _, e := range events {
		if e.Fault != nemesis.RestoreOldest && e.Fault != nemesis.QuorumLoss {
			continue
		}
		switch e.Phase {
		case "inject":
			open[e.Fault] = e.At
		case "heal":
			if at, ok := open[e.Fault]; ok {
				out = append(out, checker.Span{From: at, To: e.At})
				delete(open, e.Fault)
			}
		}
	}
	for _, at := range open {
		out = append(out, checker.Span{From: at, To: time.Duration(math.MaxInt64)})
	}
	return out
}

// burnedBounds are the solo tags' segment sizes, with one jump excused
// per restore or recovery of the run.
func burnedBounds(events []nemesis.Event) checker.SegmentBounds {
	return checker.SegmentBounds{Min: soloStep, Max: allocMaxStep, Jumps: len(lostSpans(events)), JumpMin: restoreFloor}
}
