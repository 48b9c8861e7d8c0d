package nemesis

import (
	"context"
	"fmt"
	"math/rand"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// How long the operator waits before it acts (it is a person, not a
// storm: a few deletions per scenario) and how long a tag stays deleted.
const (
	operatorIdleLo, operatorIdleHi = 2 * time.Second, 8 * time.Second
	operatorGoneLo, operatorGoneHi = 200 * time.Millisecond, 3 * time.Second
	// operatorRecreate bounds the re-creation, which must happen whatever
	// the run's context says: a tag left deleted has no final max_id.
	operatorRecreate = time.Minute
)

// operator is an operator deleting a tag the allocsvrs are serving (one of
// Env.OperatorTags) with the admin token, and re-creating it a moment
// later with the step it had, while clients keep asking for its IDs. The
// store keeps the deleted tag's max_id as a tombstone and the re-created
// tag continues above it (guarantee 7), and the allocsvrs drop the deleted
// tag's buffers, so no ID of the first life is issued again: the segment
// checkers must still pass.
//
// The calls go to the nemesis log, not to the history: the porcupine model
// checks only the tags the store workers reserve on, and the operator's
// tags are reserved on by the allocsvrs, whose reservations are not
// recorded; the ID checkers need only the IDs the clients were given.
func operator(ctx context.Context, e *Env, r *rand.Rand) error {
	if len(e.OperatorTags) == 0 {
		return nil
	}
	hold(ctx, r, operatorIdleLo, operatorIdleHi)
	if ctx.Err() != nil {
		return nil
	}
	tag := e.OperatorTags[r.Intn(len(e.OperatorTags))]
	// A leader change (other faults, or a loaded machine) is retried for
	// a while, as an operator would.
	bctx, bcancel := context.WithTimeout(ctx, 5*time.Second)
	before, err := e.readTag(bctx, tag)
	bcancel()
	if err != nil {
		// Absent (another operator copy holds it deleted) or no answer:
		// nothing to do this time.
		e.Log.Skip("operator", "GetTag %s: %v", tag, err)
		return nil
	}
	l, err := e.leader(ctx)
	if e.skipped("operator", err) {
		return nil
	}
	cli := e.C.StoreClient(l)
	step := before.GetStep()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = cli.DeleteTag(cctx, connect.NewRequest(&seqsvrv1.DeleteTagRequest{Tag: tag}))
	cancel()
	if err != nil && connect.CodeOf(err) != connect.CodeNotFound {
		// The delete may have committed: re-create below either way.
		e.Log.Inject("operator", tag, "DeleteTag (max_id %d) answered %v; re-creating anyway", before.GetMaxId(), err)
	} else {
		e.Log.Inject("operator", tag, "DeleteTag at max_id %d", before.GetMaxId())
	}
	d := hold(ctx, r, operatorGoneLo, operatorGoneHi)

	rctx, rcancel := context.WithTimeout(context.Background(), operatorRecreate)
	defer rcancel()
	if err := e.C.CreateTag(rctx, &seqsvrv1.CreateTagRequest{Tag: tag, Step: step}); err != nil {
		return fmt.Errorf("re-create %s: %w", tag, err)
	}
	afterTag, err := e.readTag(rctx, tag)
	after := afterTag.GetMaxId()
	if err != nil {
		e.Log.Heal("operator", tag, "re-created after %s (step %d); GetTag: %v", d.Round(time.Millisecond), step, err)
		return nil
	}
	if after < before.GetMaxId() {
		// A re-created tag below its tombstone hands out used IDs; the
		// ID checkers will show which, this says when.
		e.Log.Error("operator", tag, fmt.Errorf("re-created at max_id %d, below the deleted life's %d", after, before.GetMaxId()))
		return nil
	}
	e.Log.Heal("operator", tag, "re-created after %s at max_id %d (deleted at %d, step %d)", d.Round(time.Millisecond), after, before.GetMaxId(), step)
	return nil
}

// readTag reads tag through the leader, retrying while the cluster
// elects one (or answers unavailable) until ctx ends; not_found is
// answered at once.
func (e *Env) readTag(ctx context.Context, tag string) (*seqsvrv1.Tag, error) {
	for {
		l, err := e.leader(ctx)
		if err == nil {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			var resp *connect.Response[seqsvrv1.Tag]
			resp, err = e.C.StoreClient(l).GetTag(cctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: tag}))
			cancel()
			if err == nil {
				return resp.Msg, nil
			}
			if connect.CodeOf(err) == connect.CodeNotFound {
				return nil, err
			}
		}
		if sleep(ctx, 100*time.Millisecond); ctx.Err() != nil {
			return nil, err
		}
	}
}
