package fsm

import (
	"errors"
	"math"
	"strings"
	"testing"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

func TestValidateRequests(t *testing.T) {
	for name, err := range map[string]error{
		"negative start":        ValidateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Start: -1}, DefaultMaxSegmentSize),
		"negative step":         ValidateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Step: -5}, DefaultMaxSegmentSize),
		"start at max":          ValidateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Start: math.MaxInt64}, DefaultMaxSegmentSize),
		"long description":      ValidateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Description: strings.Repeat("d", MaxDescriptionLen+1)}, DefaultMaxSegmentSize),
		"update negative step":  ValidateUpdateTag(&seqsvrv1.UpdateTagRequest{Tag: "a", Step: -1}, DefaultMaxSegmentSize),
		"negative size":         ValidateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a", Size: -1}, DefaultMaxSegmentSize),
		"bad tag":               ValidateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a b"}, DefaultMaxSegmentSize),
		"long request_id":       ValidateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a", RequestId: strings.Repeat("r", MaxKeyLen+1)}, DefaultMaxSegmentSize),
		"empty node_id":         ValidateRegisterWorker(&seqsvrv1.RegisterWorkerRequest{NowMs: 1}),
		"zero now_ms":           ValidateRegisterWorker(&seqsvrv1.RegisterWorkerRequest{NodeId: "n"}),
		"renew empty node":      ValidateRenewWorker(&seqsvrv1.RenewWorkerRequest{NowMs: 1}),
		"renew negative id":     ValidateRenewWorker(&seqsvrv1.RenewWorkerRequest{NodeId: "n", WorkerId: -1, NowMs: 1}),
		"member without addr":   ValidateMember("n", "", "h"),
		"step above max":        ValidateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Step: 11}, 10),
		"update step above max": ValidateUpdateTag(&seqsvrv1.UpdateTagRequest{Tag: "a", Step: 11}, 10),
		"size above max":        ValidateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a", Size: 11}, 10),
		"default max":           ValidateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a", Size: DefaultMaxSegmentSize + 1}, DefaultMaxSegmentSize),
	} {
		if !errors.Is(err, errs.InvalidArgument) {
			t.Errorf("%s: err %v, want invalid argument", name, err)
		}
	}
	if err := ValidateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Start: 5, Step: 0}, DefaultMaxSegmentSize); err != nil {
		t.Errorf("valid create: %v", err)
	}
	// The limit itself is allowed.
	for name, err := range map[string]error{
		"step at max":        ValidateCreateTag(&seqsvrv1.CreateTagRequest{Tag: "a", Step: 10}, 10),
		"update step at max": ValidateUpdateTag(&seqsvrv1.UpdateTagRequest{Tag: "a", Step: 10}, 10),
		"size at max":        ValidateReserve(&seqsvrv1.ReserveSegmentRequest{Tag: "a", Size: 10}, 10),
	} {
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestPageParams(t *testing.T) {
	size, after, err := PageParams(0, "")
	if err != nil || size != DefaultPageSize || after != "" {
		t.Fatalf("defaults: %d %q %v", size, after, err)
	}
	size, after, err = PageParams(7, pageToken("abc"))
	if err != nil || size != 7 || after != "abc" {
		t.Fatalf("token round trip: %d %q %v", size, after, err)
	}
	for _, r := range []*seqsvrv1.ListTagsRequest{{PageSize: -1}, {PageSize: MaxPageSize + 1}, {PageToken: "!!!"}, {PageToken: pageToken("a b")}} {
		if _, _, err := PageParams(r.GetPageSize(), r.GetPageToken()); !errors.Is(err, errs.InvalidArgument) {
			t.Errorf("%v: err %v", r, err)
		}
	}
}
