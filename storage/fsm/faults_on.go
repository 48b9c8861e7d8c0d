//go:build faults

package fsm

import (
	"google.golang.org/protobuf/encoding/protowire"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/faults"
)

// The planted bugs of the fault harness that live in the state machine
// (internal/faults; planted with SEQSVR_FAULTS_BUGS). Each is reached
// through a hook that production code calls and that faults_off.go defines
// as a no-op.

// plantedSnapshotDropsMaxID is snapshot-drops-maxid: when planted,
// snapshots store every tag's max_id as 0.
func plantedSnapshotDropsMaxID(snap *seqsvrv1.FSMSnapshot) {
	if !faults.Bug(faults.BugSnapshotDropsMaxID) {
		return
	}
	for _, t := range snap.GetTags() {
		t.MaxId = 0
	}
}

// plantedNoHandoverWait is seq-no-handover-wait: when planted, rebalance
// gives a section owned by a live allocsvr to its new target at once
// instead of setting next_owner and waiting for the release or the lease
// expiry, so two allocsvrs may serve the same keys.
func plantedNoHandoverWait() bool { return faults.Bug(faults.BugSeqNoHandoverWait) }

// plantedTakeoverNoMargin is takeover-no-margin: when planted, a new
// instance taking a worker ID over starts at the old holder's last
// reported timestamp instead of one lease TTL above it, so the old
// holder's last IDs (issued up to that TTL minus its fence margin ahead)
// can be issued again by a new holder whose clock is behind.
func plantedTakeoverNoMargin() bool { return faults.Bug(faults.BugTakeoverNoMargin) }

// plantedIgnoreRequestID is ignore-request-id: when planted,
// ReserveSegment never looks its request_id up, so a retry reserves a
// second segment.
func plantedIgnoreRequestID() bool { return faults.Bug(faults.BugIgnoreRequestID) }

// PlantedGapField is the field number of ungated-new-field's reservation
// field (storage's plantedUngatedNewField proposes it): a field no
// release's proto declares, so the base release's state machine keeps it
// as an unknown field and applies the reservation without it, while this
// build's (-tags faults) applies it. It stands for any field of a newer
// feature level proposed before the cluster version allows it.
const PlantedGapField = 1000

// plantedGap is the number of IDs ungated-new-field's field asks the
// reservation to skip above max_id: this build applies it whenever the
// field is present, planted in this process or not, as a binary that knew
// the field would.
const plantedGap = 1000

// PlantGap adds the field to c.
func PlantGap(c *seqsvrv1.ReserveSegmentCommand) {
	b := protowire.AppendTag(nil, PlantedGapField, protowire.VarintType)
	b = protowire.AppendVarint(b, plantedGap)
	c.ProtoReflect().SetUnknown(append(c.ProtoReflect().GetUnknown(), b...))
}

// reserveGap is the gap c's unknown fields ask for (0 without the field).
func reserveGap(c *seqsvrv1.ReserveSegmentCommand) int64 {
	b := c.ProtoReflect().GetUnknown()
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0
		}
		b = b[n:]
		if num == PlantedGapField && typ == protowire.VarintType {
			v, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return 0
			}
			return int64(v)
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return 0
		}
		b = b[m:]
	}
	return 0
}
