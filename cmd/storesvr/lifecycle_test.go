package main

import (
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// Guarantee 7 on real processes: a deleted tag is gone for GetTag and
// ListTags, a second delete is not_found, and the name created again
// (through a follower, with a start below the old max_id) continues above
// everything its first life reserved, also after the members restart
// from disk (the tombstone is in the log and in snapshots).
func TestDeleteAndRecreateContinuesAbove(t *testing.T) {
	c, ctx, leader, follower := threeStores(t, []string{"--snapshot-threshold", "4", "--snapshot-interval", "100ms"}, 90*time.Second)
	sc := c.StoreClient(follower)
	createTag(t, c, leader, "life", 10)
	var top int64
	for i := 0; i < 6; i++ {
		seg, err := sc.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "life"}))
		if err != nil {
			t.Fatal(err)
		}
		top = seg.Msg.GetLast()
	}
	if _, err := sc.DeleteTag(ctx, connect.NewRequest(&seqsvrv1.DeleteTagRequest{Tag: "life"})); err != nil {
		t.Fatal(err)
	}
	if _, err := sc.DeleteTag(ctx, connect.NewRequest(&seqsvrv1.DeleteTagRequest{Tag: "life"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("second delete: %v, want not_found", err)
	}
	if _, err := sc.GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "life"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("GetTag of a deleted tag: %v, want not_found", err)
	}
	list, err := sc.ListTags(ctx, connect.NewRequest(&seqsvrv1.ListTagsRequest{}))
	if err != nil || len(list.Msg.GetTags()) != 0 {
		t.Fatalf("ListTags after the delete: %v %v, want no tags", list, err)
	}

	// Restart every member: the tombstone comes back from disk.
	for _, s := range c.Stores {
		if err := s.Restart(ctx); err != nil {
			t.Fatal(err)
		}
	}
	leader, follower = leaderAndFollower(ctx, t, c)
	sc = c.StoreClient(follower)
	poll.UntilCtx(ctx, t, "re-create after restart", func() bool {
		res, err := sc.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "life", Start: 5, Step: 10}))
		if err != nil {
			return false
		}
		if res.Msg.GetMaxId() != top {
			t.Fatalf("re-created tag answered max_id %d, want %d (the deleted life's)", res.Msg.GetMaxId(), top)
		}
		return true
	})
	seg, err := sc.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "life"}))
	if err != nil || seg.Msg.GetFirst() != top+1 {
		t.Fatalf("first segment of the new life: %v %v, want it to start at %d", seg, err, top+1)
	}
}
