package fsm

import (
	"fmt"
	"math"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// DefaultRequestRecordLimit bounds the idempotency record when neither the
// configuration nor the command says otherwise.
const DefaultRequestRecordLimit = 100000

// applyCreateTag creates a tag at max_id = start, or above the tombstone
// of an earlier tag of the same name: max(start, tombstone max_id), so the
// new life never issues an ID of an earlier one (guarantee 7). The
// tombstone is consumed: the live tag now carries its max_id.
func (st *fsmState) applyCreateTag(now int64, c *seqsvrv1.CreateTagCommand) Result {
	if _, ok := st.tags[c.GetTag()]; ok {
		return Result{Err: fmt.Errorf("%w: tag %q", errs.AlreadyExists, c.GetTag())}
	}
	if c.GetStart() < 0 || c.GetStep() < 0 {
		return Result{Err: fmt.Errorf("%w: negative start or step", errs.InvalidArgument)}
	}
	step := c.GetStep()
	if step == 0 {
		step = DefaultStep
	}
	maxID := c.GetStart()
	var rate *seqsvrv1.RateState
	if dead, ok := st.tombstones[c.GetTag()]; ok {
		maxID = max(maxID, dead)
		if peak := st.tombRates[c.GetTag()]; peak > 0 {
			// The name's peak carries over its lives, for a restore's jump.
			rate = &seqsvrv1.RateState{WindowStartMs: now, WindowStartValue: maxID, PeakPerSec: peak}
		}
		delete(st.tombstones, c.GetTag())
		delete(st.tombRates, c.GetTag())
	}
	t := &seqsvrv1.TagState{Tag: c.GetTag(), MaxId: maxID, Step: step, Description: c.GetDescription(), UpdateTimeMs: now, Rate: rate}
	st.tags[t.Tag] = t
	return Result{Tag: cloneTag(t)}
}

// applyUpdateTag changes step and description only: max_id never moves
// backwards because nothing here can touch it.
func (st *fsmState) applyUpdateTag(now int64, c *seqsvrv1.UpdateTagCommand) Result {
	t, ok := st.tags[c.GetTag()]
	if !ok {
		return Result{Err: fmt.Errorf("%w: tag %q", errs.NotFound, c.GetTag())}
	}
	if c.GetStep() < 0 {
		return Result{Err: fmt.Errorf("%w: negative step", errs.InvalidArgument)}
	}
	if c.GetStep() > 0 {
		t.Step = c.GetStep()
	}
	if c.Description != nil {
		t.Description = c.GetDescription()
	}
	t.UpdateTimeMs = now
	return Result{Tag: cloneTag(t)}
}

func (st *fsmState) applyDeleteTag(c *seqsvrv1.DeleteTagCommand) Result {
	t, ok := st.tags[c.GetTag()]
	if !ok {
		return Result{Err: fmt.Errorf("%w: tag %q", errs.NotFound, c.GetTag())}
	}
	// The tombstone keeps max_id for ever (a name's tombstone is one entry,
	// replaced by its next life): forgetting it would let a re-created tag
	// issue the deleted tag's IDs again.
	st.tombstones[t.GetTag()] = t.GetMaxId()
	if peak := t.GetRate().GetPeakPerSec(); peak > 0 {
		st.tombRates[t.GetTag()] = peak
	}
	delete(st.tags, c.GetTag())
	return Result{}
}

// applyReserveSegment does max_id += size here, in the log order, so two
// leaders can never hand out the same range. A request_id already in the
// record gets its recorded segment back and nothing changes.
func (st *fsmState) applyReserveSegment(now int64, c *seqsvrv1.ReserveSegmentCommand) Result {
	if id := c.GetRequestId(); id != "" && !plantedIgnoreRequestID() {
		if rec, ok := st.requests[id]; ok {
			if rec.GetTag() != c.GetTag() {
				return Result{Err: fmt.Errorf("%w: request_id %q was already used for tag %q", errs.InvalidArgument, id, rec.GetTag())}
			}
			return Result{Seg: cloneRecord(rec), Tag: cloneTag(st.tags[rec.GetTag()])}
		}
	}
	t, ok := st.tags[c.GetTag()]
	if !ok {
		return Result{Err: fmt.Errorf("%w: tag %q", errs.NotFound, c.GetTag())}
	}
	first, last, err := nextRange(t, c.GetSize())
	if err != nil {
		return Result{Err: err}
	}
	// Only -tags faults builds apply a gap (the planted
	// ungated-new-field); elsewhere it is 0.
	gap := reserveGap(c)
	first, last = first+gap, last+gap
	rec := &seqsvrv1.RequestRecord{RequestId: c.GetRequestId(), Tag: t.GetTag(), First: first, Last: last}
	t.Rate = observeRate(t.Rate, now, t.GetMaxId(), rec.Last)
	t.MaxId = rec.Last
	t.UpdateTimeMs = now
	if rec.RequestId != "" {
		st.remember(rec, c.GetRecordLimit())
	}
	return Result{Seg: cloneRecord(rec), Tag: cloneTag(t)}
}

// nextRange is the range a reservation of size (0: the tag's step) takes
// next from t: the IDs just above max_id. It changes nothing. A range that
// would pass 2^63-1 is errs.ResourceExhausted.
func nextRange(t *seqsvrv1.TagState, size int64) (first, last int64, err error) {
	if size == 0 {
		size = t.GetStep()
	}
	if size <= 0 {
		return 0, 0, fmt.Errorf("%w: size must be positive, got %d", errs.InvalidArgument, size)
	}
	if t.GetMaxId() > math.MaxInt64-size {
		// The tag's ID space is used up (for this size): nothing the caller
		// can fix by retrying, and not a malformed request either.
		return 0, 0, fmt.Errorf("%w: tag %q has max_id %d: a segment of %d IDs would pass 2^63-1", errs.ResourceExhausted, t.GetTag(), t.GetMaxId(), size)
	}
	return t.GetMaxId() + 1, t.GetMaxId() + size, nil
}

// remember appends to the FIFO idempotency record and evicts the oldest
// entries beyond limit. The limit comes from the command, so every member
// evicts exactly the same entries.
func (st *fsmState) remember(rec *seqsvrv1.RequestRecord, limit int64) {
	if limit <= 0 {
		limit = DefaultRequestRecordLimit
	}
	st.requests[rec.RequestId] = rec
	st.order = append(st.order, rec.RequestId)
	for int64(len(st.order)-st.head) > limit {
		delete(st.requests, st.order[st.head])
		st.order[st.head] = ""
		st.head++
	}
	// Compact once the dead prefix dominates, so the slice stays O(limit).
	if st.head > 1024 && st.head*2 > len(st.order) {
		st.order = append([]string(nil), st.order[st.head:]...)
		st.head = 0
	}
}

func cloneTag(t *seqsvrv1.TagState) *seqsvrv1.TagState {
	if t == nil {
		return nil
	}
	// Field copies: proto.Clone is reflective and this is the hot path.
	// The rate is left out: answers do not need it (snapshots copy it).
	return &seqsvrv1.TagState{Tag: t.GetTag(), MaxId: t.GetMaxId(), Step: t.GetStep(), Description: t.GetDescription(), UpdateTimeMs: t.GetUpdateTimeMs()}
}

func cloneRecord(r *seqsvrv1.RequestRecord) *seqsvrv1.RequestRecord {
	return &seqsvrv1.RequestRecord{RequestId: r.GetRequestId(), Tag: r.GetTag(), First: r.GetFirst(), Last: r.GetLast()}
}
