package storage

import (
	"errors"
	"math"
	"strings"
	"testing"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

func TestValidateRequests(t *testing.T) {
	for name, err := range map[string]error{
		"negative start":       validateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Start: -1}),
		"negative step":        validateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Step: -5}),
		"start at max":         validateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Start: math.MaxInt64}),
		"long description":     validateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Description: strings.Repeat("d", MaxDescriptionLen+1)}),
		"update negative step": validateUpdateTag(&seqsvrv1.UpdateTagRequest{Tag: "a", Step: -1}),
		"negative size":        validateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a", Size: -1}),
		"bad tag":              validateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a b"}),
		"long request_id":      validateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a", RequestId: strings.Repeat("r", MaxKeyLen+1)}),
		"empty node_id":        validateRegisterWorker(&seqsvrv1.RegisterWorkerRequest{NowMs: 1}),
		"zero now_ms":          validateRegisterWorker(&seqsvrv1.RegisterWorkerRequest{NodeId: "n"}),
		"renew empty node":     validateRenewWorker(&seqsvrv1.RenewWorkerRequest{NowMs: 1}),
		"renew negative id":    validateRenewWorker(&seqsvrv1.RenewWorkerRequest{NodeId: "n", WorkerId: -1, NowMs: 1}),
		"member without addr":  validateMember("n", "", "h"),
	} {
		if !errors.Is(err, errs.InvalidArgument) {
			t.Errorf("%s: err %v, want invalid argument", name, err)
		}
	}
	if err := validateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Start: 5, Step: 0}); err != nil {
		t.Errorf("valid create: %v", err)
	}
}

func TestPageParams(t *testing.T) {
	size, after, err := pageParams(0, "")
	if err != nil || size != DefaultPageSize || after != "" {
		t.Fatalf("defaults: %d %q %v", size, after, err)
	}
	size, after, err = pageParams(7, pageToken("abc"))
	if err != nil || size != 7 || after != "abc" {
		t.Fatalf("token round trip: %d %q %v", size, after, err)
	}
	for _, r := range []*seqsvrv1.ListTagsRequest{{PageSize: -1}, {PageSize: MaxPageSize + 1}, {PageToken: "!!!"}, {PageToken: pageToken("a b")}} {
		if _, _, err := pageParams(r.GetPageSize(), r.GetPageToken()); !errors.Is(err, errs.InvalidArgument) {
			t.Errorf("%v: err %v", r, err)
		}
	}
}

func TestParsePeers(t *testing.T) {
	peers, err := ParsePeers(" a=127.0.0.1:7001@127.0.0.1:8001, b=127.0.0.1:7002@127.0.0.1:8002 ")
	if err != nil || len(peers) != 2 || peers[1] != (Peer{ID: "b", RaftAddr: "127.0.0.1:7002", HTTPAddr: "127.0.0.1:8002"}) {
		t.Fatalf("%v %v", peers, err)
	}
	if p, err := ParsePeers(""); p != nil || err != nil {
		t.Fatalf("empty: %v %v", p, err)
	}
	for _, bad := range []string{
		"a", "a=r", "=r@h", "a=@h", "a=r@", "a=r@h,a=r2@h2", "a=r@h,b=r@h2", "a=r@h,b=r2@h", "a=r@h,,b=r2@h2",
	} {
		if _, err := ParsePeers(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestConfigDefaultsAndChecks(t *testing.T) {
	c, err := Config{NodeID: "a", RaftAddr: "r", HTTPAddr: "h"}.withDefaults()
	if err != nil || c.WorkerLeaseTTL != spec.DefaultWorkerLeaseTTL || c.WorkerRetention != spec.DefaultWorkerRetention ||
		c.RequestRecordLimit != DefaultRequestRecordLimit || c.Clock == nil || c.HTTPClient == nil || c.Logger == nil {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	for name, bad := range map[string]Config{
		"no id":          {RaftAddr: "r", HTTPAddr: "h"},
		"peers and join": {NodeID: "a", RaftAddr: "r", HTTPAddr: "h", Join: "x", Peers: []Peer{{"a", "r", "h"}}},
		"not in peers":   {NodeID: "a", RaftAddr: "r", HTTPAddr: "h", Peers: []Peer{{"b", "r2", "h2"}}},
		"addr mismatch":  {NodeID: "a", RaftAddr: "r", HTTPAddr: "h", Peers: []Peer{{"a", "r9", "h"}}},
	} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
