package storage

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/clock/clocktest"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// Bad input through the real handler on a one-member cluster: the right
// code, and nothing changes or is burned.
func TestServiceBadInputAndPaging(t *testing.T) {
	c := newTestCluster(t, 1, nil)
	leader := c.waitForLeader()
	cl := leader.client()
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if _, err := cl.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: fmt.Sprintf("t%d", 4-i), Step: 10})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cl.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "big", Start: math.MaxInt64 - 5, Step: 10})); err != nil {
		t.Fatal(err)
	}
	// The leader raises the cluster version in the background once it
	// has heard every member's level: wait for it, so that the raise is
	// not taken for a change made by bad input.
	poll.Until(t, 15*time.Second, "the cluster version raised to this binary's level", func() bool {
		return leader.store.fsm.ClusterVersion() >= fsm.Level
	})
	before := stateOnly(leader.store.fsm.State())

	bad := map[string]func() error{
		"empty tag": func() error {
			_, err := cl.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{}))
			return err
		},
		"bad chars": func() error {
			_, err := cl.GetTag(ctx, connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "a/b"}))
			return err
		},
		"negative start": func() error {
			_, err := cl.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "n", Start: -1}))
			return err
		},
		"negative step update": func() error {
			_, err := cl.UpdateTag(ctx, connect.NewRequest(&seqsvrv1.UpdateTagRequest{Tag: "t1", Step: -1}))
			return err
		},
		"negative size": func() error {
			_, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t1", Size: -1}))
			return err
		},
		"size above --max-segment-size": func() error {
			_, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t1", Size: DefaultMaxSegmentSize + 1}))
			return err
		},
		"step above --max-segment-size": func() error {
			_, err := cl.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "huge", Step: DefaultMaxSegmentSize + 1}))
			return err
		},
		"update step above --max-segment-size": func() error {
			_, err := cl.UpdateTag(ctx, connect.NewRequest(&seqsvrv1.UpdateTagRequest{Tag: "t1", Step: DefaultMaxSegmentSize + 1}))
			return err
		},
		"page size": func() error {
			_, err := cl.ListTags(ctx, connect.NewRequest(&seqsvrv1.ListTagsRequest{PageSize: 5000}))
			return err
		},
		"page token": func() error {
			_, err := cl.ListTags(ctx, connect.NewRequest(&seqsvrv1.ListTagsRequest{PageToken: "%%%"}))
			return err
		},
		"empty node_id": func() error {
			_, err := cl.RegisterWorker(ctx, connect.NewRequest(&seqsvrv1.RegisterWorkerRequest{NowMs: 1}))
			return err
		},
	}
	for name, call := range bad {
		if got := connectCode(call()); got != "invalid_argument" {
			t.Errorf("%s: code %s, want invalid_argument", name, got)
		}
	}
	// A tag whose next segment would pass 2^63-1 is exhausted, not malformed.
	if _, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "big", Size: 6})); connectCode(err) != "resource_exhausted" {
		t.Errorf("overflowing size: %v, want resource_exhausted", err)
	}
	if _, err := cl.DeleteTag(ctx, connect.NewRequest(&seqsvrv1.DeleteTagRequest{Tag: "nope"})); connectCode(err) != "not_found" {
		t.Errorf("delete unknown: %v", err)
	}
	if _, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "nope"})); connectCode(err) != "not_found" {
		t.Errorf("reserve unknown: %v", err)
	}
	if after := stateOnly(leader.store.fsm.State()); !proto.Equal(before, after) {
		t.Fatalf("bad input changed state:\n%v\n%v", before, after)
	}

	// Paging: sorted by name, a token per full page, none after the last.
	var names []string
	token := ""
	for pages := 0; ; pages++ {
		res, err := cl.ListTags(ctx, connect.NewRequest(&seqsvrv1.ListTagsRequest{PageSize: 2, PageToken: token}))
		if err != nil || pages > 5 {
			t.Fatalf("list: %v (page %d)", err, pages)
		}
		for _, tg := range res.Msg.GetTags() {
			names = append(names, tg.GetTag())
		}
		if token = res.Msg.GetNextPageToken(); token == "" {
			break
		}
	}
	if fmt.Sprint(names) != "[big t0 t1 t2 t3 t4]" {
		t.Fatalf("listed %v", names)
	}

	// UpdateTag never moves max_id and keeps it in the answer.
	seg, err := cl.ReserveSegment(ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t1"}))
	if err != nil {
		t.Fatal(err)
	}
	up, err := cl.UpdateTag(ctx, connect.NewRequest(&seqsvrv1.UpdateTagRequest{Tag: "t1", Step: 3, Description: proto.String("x")}))
	if err != nil || up.Msg.GetMaxId() != seg.Msg.GetLast() || up.Msg.GetStep() != 3 || up.Msg.GetUpdateTime() == nil {
		t.Fatalf("update: %v %v", up, err)
	}
}

// Commands carry the time of Config.Clock (the leader's), and so does
// ClusterStatus.
func TestCommandsCarryConfigClock(t *testing.T) {
	clk := clocktest.New(time.UnixMilli(1_800_000_000_000))
	c := newTestCluster(t, 1, func(cfg *Config) { cfg.Clock = clk })
	cl := c.waitForLeader().client()
	ctx := context.Background()
	clk.Advance(1500 * time.Millisecond)
	tag, err := cl.CreateTag(ctx, connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "c"}))
	if err != nil || tag.Msg.GetUpdateTime().AsTime().UnixMilli() != 1_800_000_001_500 {
		t.Fatalf("created %v %v, want update_time from the configured clock", tag, err)
	}
	st, err := cl.ClusterStatus(ctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
	if err != nil || st.Msg.GetNowMs() != 1_800_000_001_500 {
		t.Fatalf("status %v %v, want now_ms from the configured clock", st, err)
	}
}
