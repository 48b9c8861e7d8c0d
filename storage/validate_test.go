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
		"negative start":        validateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Start: -1}, DefaultMaxSegmentSize),
		"negative step":         validateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Step: -5}, DefaultMaxSegmentSize),
		"start at max":          validateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Start: math.MaxInt64}, DefaultMaxSegmentSize),
		"long description":      validateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Description: strings.Repeat("d", MaxDescriptionLen+1)}, DefaultMaxSegmentSize),
		"update negative step":  validateUpdateTag(&seqsvrv1.UpdateTagRequest{Tag: "a", Step: -1}, DefaultMaxSegmentSize),
		"negative size":         validateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a", Size: -1}, DefaultMaxSegmentSize),
		"bad tag":               validateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a b"}, DefaultMaxSegmentSize),
		"long request_id":       validateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a", RequestId: strings.Repeat("r", MaxKeyLen+1)}, DefaultMaxSegmentSize),
		"empty node_id":         validateRegisterWorker(&seqsvrv1.RegisterWorkerRequest{NowMs: 1}),
		"zero now_ms":           validateRegisterWorker(&seqsvrv1.RegisterWorkerRequest{NodeId: "n"}),
		"renew empty node":      validateRenewWorker(&seqsvrv1.RenewWorkerRequest{NowMs: 1}),
		"renew negative id":     validateRenewWorker(&seqsvrv1.RenewWorkerRequest{NodeId: "n", WorkerId: -1, NowMs: 1}),
		"member without addr":   validateMember("n", "", "h"),
		"step above max":        validateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Step: 11}, 10),
		"update step above max": validateUpdateTag(&seqsvrv1.UpdateTagRequest{Tag: "a", Step: 11}, 10),
		"size above max":        validateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a", Size: 11}, 10),
		"default max":           validateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a", Size: DefaultMaxSegmentSize + 1}, DefaultMaxSegmentSize),
	} {
		if !errors.Is(err, errs.InvalidArgument) {
			t.Errorf("%s: err %v, want invalid argument", name, err)
		}
	}
	if err := validateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Start: 5, Step: 0}, DefaultMaxSegmentSize); err != nil {
		t.Errorf("valid create: %v", err)
	}
	// The limit itself is allowed.
	for name, err := range map[string]error{
		"step at max":        validateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Step: 10}, 10),
		"update step at max": validateUpdateTag(&seqsvrv1.UpdateTagRequest{Tag: "a", Step: 10}, 10),
		"size at max":        validateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a", Size: 10}, 10),
	} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
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
		"no id":               {RaftAddr: "r", HTTPAddr: "h"},
		"peers and join":      {NodeID: "a", RaftAddr: "r", HTTPAddr: "h", Join: "x", Peers: []Peer{{"a", "r", "h"}}},
		"bootstrap and peers": {NodeID: "a", RaftAddr: "r", HTTPAddr: "h", Bootstrap: true, Peers: []Peer{{"a", "r", "h"}}},
		"bootstrap and join":  {NodeID: "a", RaftAddr: "r", HTTPAddr: "h", Bootstrap: true, Join: "x"},
	} {
		if _, err := bad.withDefaults(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// The peers list is checked where it is used: when it is about to
	// become the first configuration.
	for name, bad := range map[string]Config{
		"not in peers":  {NodeID: "a", RaftAddr: "r", HTTPAddr: "h", Peers: []Peer{{"b", "r2", "h2"}}},
		"addr mismatch": {NodeID: "a", RaftAddr: "r", HTTPAddr: "h", Peers: []Peer{{"a", "r9", "h"}}},
	} {
		if err := checkBootstrapPeers(bad); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := checkBootstrapPeers(Config{NodeID: "a", RaftAddr: "r", Peers: []Peer{{"b", "r2", "h2"}, {"a", "r", "h"}}}); err != nil {
		t.Errorf("good peers: %v", err)
	}
}
