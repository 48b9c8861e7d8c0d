package storage

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/poll"
)

// Per-key sequences through a follower of a 3-member cluster: every write
// is forwarded to the leader, every read too, and business errors keep
// their codes on the way back.
func TestClusterSeqSpaces(t *testing.T) {
	c := newTestCluster(t, 3, func(cfg *Config) { cfg.SeqLeaseTTL = time.Minute })
	leader := c.waitForLeader()
	f := c.followers(leader)[0].patientClient()
	ctx := context.Background()

	sp, err := f.CreateSpace(ctx, connect.NewRequest(&seqsvrv1.CreateSpaceRequest{Space: "users", KeyCount: 1000, SectionSize: 100, Step: 50}))
	if err != nil || sp.Msg.GetSectionCount() != 10 || sp.Msg.GetStep() != 50 {
		t.Fatalf("create through follower: %v %v", sp, err)
	}
	if _, err := f.CreateSpace(ctx, connect.NewRequest(&seqsvrv1.CreateSpaceRequest{Space: "users"})); connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Fatalf("second create: %v", err)
	}
	heartbeat := func(node string, released ...*seqsvrv1.SectionSpan) *seqsvrv1.SeqHeartbeatResponse {
		t.Helper()
		r, err := f.SeqHeartbeat(ctx, connect.NewRequest(&seqsvrv1.SeqHeartbeatRequest{NodeId: node, InstanceId: node + "-1", Url: "http://" + node, Released: released}))
		if err != nil {
			t.Fatalf("heartbeat %s: %v", node, err)
		}
		return r.Msg
	}
	hb := heartbeat("a")
	if hb.GetLeaseTtlMs() != time.Minute.Milliseconds() || len(hb.GetTables()) != 1 || hb.GetTables()[0].GetSections()[0].GetOwner() != "a" {
		t.Fatalf("first heartbeat %v", hb)
	}
	hb = heartbeat("b")
	if s := hb.GetTables()[0].GetSections(); len(s) != 2 || s[1].GetOwner() != "a" || s[1].GetNextOwner() != "b" || s[1].GetOwnerUrl() != "http://a" {
		t.Fatalf("handover not pending: %v", hb)
	}
	hb = heartbeat("a", &seqsvrv1.SectionSpan{Space: "users", FirstSection: 5, LastSection: 9})
	if s := hb.GetTables()[0].GetSections(); len(s) != 2 || s[1].GetOwner() != "b" || s[1].GetNextOwner() != "" {
		t.Fatalf("release did not hand over: %v", hb)
	}

	raise := func(node string, sec uint64, known int64) (*seqsvrv1.RaiseSectionsResponse, error) {
		r, err := f.RaiseSections(ctx, connect.NewRequest(&seqsvrv1.RaiseSectionsRequest{NodeId: node, InstanceId: node + "-1", Space: "users",
			Sections: []*seqsvrv1.SectionRaise{{Section: sec, KnownMax: known}}}))
		if err != nil {
			return nil, err
		}
		return r.Msg, nil
	}
	r, err := raise("b", 7, -1)
	if err != nil || r.GetSections()[0].GetPrevMax() != 0 || r.GetSections()[0].GetMaxSeq() != 50 || r.GetRoutingVersion() != hb.GetTables()[0].GetRoutingVersion() {
		t.Fatalf("raise through follower: %v %v", r, err)
	}
	if _, err := raise("a", 7, -1); connect.CodeOf(err) != connect.CodeFailedPrecondition ||
		!errors.Is(errs.FromConnect("RaiseSections", err), errs.FailedPrecondition) {
		t.Fatalf("raise by a non-owner: %v", err)
	}
	if _, err := raise("b", 10, -1); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("raise past the last section: %v", err)
	}

	rt, err := f.GetRouting(ctx, connect.NewRequest(&seqsvrv1.GetRoutingRequest{Space: "users"}))
	if err != nil || rt.Msg.GetRoutingVersion() != hb.GetTables()[0].GetRoutingVersion() || len(rt.Msg.GetSections()) != 2 {
		t.Fatalf("routing through follower: %v %v", rt, err)
	}
	if _, err := f.GetSpace(ctx, connect.NewRequest(&seqsvrv1.GetSpaceRequest{Space: "nope"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("unknown space: %v", err)
	}
	for _, name := range []string{"zeta", "alpha"} {
		if _, err := f.CreateSpace(ctx, connect.NewRequest(&seqsvrv1.CreateSpaceRequest{Space: name})); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for tok := ""; ; {
		list, err := f.ListSpaces(ctx, connect.NewRequest(&seqsvrv1.ListSpacesRequest{PageSize: 2, PageToken: tok}))
		if err != nil {
			t.Fatalf("list through follower: %v", err)
		}
		for _, s := range list.Msg.GetSpaces() {
			names = append(names, s.GetSpace())
		}
		if tok = list.Msg.GetNextPageToken(); tok == "" {
			break
		}
	}
	if strings.Join(names, ",") != "alpha,users,zeta" {
		t.Fatalf("listed %v", names)
	}
	// Every member applied the same max_seq.
	for _, n := range c.nodes {
		poll.Until(t, 5*time.Second, n.id+" to apply the raise", func() bool {
			for _, sp := range n.store.fsm.State().GetSpaces() {
				for _, m := range sp.GetMaxes() {
					if sp.GetSpace() == "users" && m.GetSection() == 7 {
						return m.GetMaxSeq() == 50
					}
				}
			}
			return false
		})
	}
}
