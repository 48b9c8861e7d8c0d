package storage

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/poll"
	"github.com/seqsvr/seqsvr/internal/routes"
	"github.com/seqsvr/seqsvr/internal/routes/routestest"
)

// createTestTag makes tag t (step 10) through the leader.
func createTestTag(t *testing.T, leader *testNode) {
	t.Helper()
	// A retry after an election may find the first attempt's tag.
	if _, err := leader.patientClient().CreateTag(context.Background(), connect.NewRequest(&seqsvrv1.CreateTagRequest{Tag: "t", Step: 10})); err != nil && connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Fatal(err)
	}
}

// The leader's front answers ReserveSegment with connect-go's bytes, and
// what it declines (other codecs) connect-go answers.
func TestRoutesMatchConnect(t *testing.T) {
	reserve := func(name string, req *seqsvrv1.ReserveSegmentRequest, front bool, header ...string) routestest.Case {
		b, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		return routestest.Case{Name: name, Path: seqsvrv1connect.StoreServiceReserveSegmentProcedure, Header: routestest.Connect(header...), Body: b, Front: front}
	}
	routestest.Check(t, func(t *testing.T) routes.Table {
		leader := newTestCluster(t, 1, nil).waitForLeader()
		createTestTag(t, leader)
		return leader.store.Routes()
	}, []routestest.Case{
		reserve("size 5", &seqsvrv1.ReserveSegmentRequest{Tag: "t", Size: 5}, true),
		reserve("with a deadline", &seqsvrv1.ReserveSegmentRequest{Tag: "t", Size: 5}, true, "Connect-Timeout-Ms", "60000"),
		reserve("stored step", &seqsvrv1.ReserveSegmentRequest{Tag: "t"}, true),
		reserve("request_id", &seqsvrv1.ReserveSegmentRequest{Tag: "t", RequestId: "r1"}, true),
		reserve("request_id again", &seqsvrv1.ReserveSegmentRequest{Tag: "t", RequestId: "r1"}, true),
		reserve("unknown tag", &seqsvrv1.ReserveSegmentRequest{Tag: "nope"}, true),
		reserve("bad tag", &seqsvrv1.ReserveSegmentRequest{Tag: "a/b"}, true),
		reserve("negative size", &seqsvrv1.ReserveSegmentRequest{Tag: "t", Size: -1}, true),
		reserve("empty", &seqsvrv1.ReserveSegmentRequest{}, true),
		{Name: "truncated body", Path: seqsvrv1connect.StoreServiceReserveSegmentProcedure, Header: routestest.Connect(), Body: []byte{0x0a, 0x09, 't'}, Front: true},
		{Name: "JSON", Path: seqsvrv1connect.StoreServiceReserveSegmentProcedure, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(`{"tag":"t"}`)},
		{Name: "GetTag", Path: seqsvrv1connect.StoreServiceGetTagProcedure, Header: routestest.Connect(), Body: []byte{0x0a, 0x04, 'n', 'o', 'p', 'e'}},
	})
}

// A follower's front declines before proposing anything: the connection
// goes to net/http, whose handlers forward the call to the leader, and it
// stays there.
//
// The counts mean something only while the member stays a follower of
// one leader: under load (-race, other tests on the 2 cores) a leader
// change once made it the leader mid-test, and its front then served both
// calls; a leader that lost its lease answers a forwarded call
// unavailable. An attempt during which the term moved or a call was
// answered unavailable is run again on a follower of the then leader;
// three such attempts in a row fail the test.
func TestRoutesReserveOnFollowerHandsOff(t *testing.T) {
	c := newTestCluster(t, 3, nil)
	createTestTag(t, c.waitForLeader())
	for attempt := 1; ; attempt++ {
		leader := c.waitForLeader()
		follower := c.followers(leader)[0]
		term := follower.store.raft.CurrentTerm()
		var next int64
		poll.UntilOK(t, 30*time.Second, "the tag's max_id", func() error { // a read: retried while there is no leader
			tag, err := leader.client().GetTag(context.Background(), connect.NewRequest(&seqsvrv1.GetTagRequest{Tag: "t"}))
			if err != nil {
				return err
			}
			next = tag.Msg.GetMaxId() + 1
			return nil
		})
		tb := follower.store.Routes()
		url, slow, front := routestest.ServeH1(t, routestest.Mount(tb), tb.Front(1<<20, testLogger()))
		cl := seqsvrv1connect.NewStoreServiceClient(routestest.H1Client(t), url)
		var callErr error
		for i := range 2 {
			res, err := cl.ReserveSegment(context.Background(), connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "t", Size: 3}))
			if err != nil {
				callErr = fmt.Errorf("call %d: %w", i, err)
				break
			}
			if want := [2]int64{next, next + 2}; res.Msg.GetFirst() != want[0] || res.Msg.GetLast() != want[1] {
				callErr = fmt.Errorf("call %d: segment %v, want %v", i, res.Msg, want)
				break
			}
			next += 3
		}
		st := front.Stats()
		// A leader that lost its lease answers the forwarded call
		// unavailable before anyone's term moves: a leader change too.
		moved := follower.store.raft.CurrentTerm()
		if moved != term || connect.CodeOf(callErr) == connect.CodeUnavailable {
			if attempt == 3 {
				t.Fatalf("the leader changed during each of %d attempts (last: term %d to %d, %v); no attempt ran on a steady follower", attempt, term, moved, callErr)
			}
			t.Logf("attempt %d: the leader changed (term %d to %d, %v); again on the new leader's follower", attempt, term, moved, callErr)
			continue
		}
		if callErr != nil {
			t.Fatal(callErr)
		}
		if st.Served != 0 || st.HandOffs["declined"] != 1 || slow.Load() != 2 {
			t.Fatalf("front served %d, declined %d connections, net/http got %d; want 0, 1, 2",
				st.Served, st.HandOffs["declined"], slow.Load())
		}
		return
	}
}
