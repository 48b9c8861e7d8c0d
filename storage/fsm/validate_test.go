package fsm

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// check runs CheckCommand on a Command of m with MaxSegmentSize maxSize.
func check(m proto.Message, maxSize int64) error {
	return CheckCommand(wrap(m), Limits{MaxSegmentSize: maxSize})
}

// wrap is the Command whose oneof holds m.
func wrap(m proto.Message) *seqsvrv1.Command {
	cmd := &seqsvrv1.Command{}
	r := cmd.ProtoReflect()
	fields := r.Descriptor().Oneofs().ByName("cmd").Fields()
	for i := 0; i < fields.Len(); i++ {
		if fd := fields.Get(i); fd.Message().FullName() == m.ProtoReflect().Descriptor().FullName() {
			r.Set(fd, protoreflect.ValueOfMessage(m.ProtoReflect()))
			return cmd
		}
	}
	panic(fmt.Sprintf("%T is no command", m))
}

// The checks registered with the commands refuse what a caller must not
// have proposed, through CheckCommand.
func TestCheckCommands(t *testing.T) {
	for name, err := range map[string]error{
		"negative start":        check(&seqsvrv1.CreateTagCommand{Tag: "a", Start: -1}, DefaultMaxSegmentSize),
		"negative step":         check(&seqsvrv1.CreateTagCommand{Tag: "a", Step: -5}, DefaultMaxSegmentSize),
		"start at max":          check(&seqsvrv1.CreateTagCommand{Tag: "a", Start: math.MaxInt64}, DefaultMaxSegmentSize),
		"long description":      check(&seqsvrv1.CreateTagCommand{Tag: "a", Description: strings.Repeat("d", MaxDescriptionLen+1)}, DefaultMaxSegmentSize),
		"update negative step":  check(&seqsvrv1.UpdateTagCommand{Tag: "a", Step: -1}, DefaultMaxSegmentSize),
		"negative size":         check(&seqsvrv1.ReserveSegmentCommand{Tag: "a", Size: -1}, DefaultMaxSegmentSize),
		"bad tag":               check(&seqsvrv1.ReserveSegmentCommand{Tag: "a b"}, DefaultMaxSegmentSize),
		"long request_id":       check(&seqsvrv1.ReserveSegmentCommand{Tag: "a", RequestId: strings.Repeat("r", MaxKeyLen+1)}, DefaultMaxSegmentSize),
		"empty node_id":         check(&seqsvrv1.RegisterWorkerCommand{NowMs: 1}, 0),
		"zero now_ms":           check(&seqsvrv1.RegisterWorkerCommand{NodeId: "n"}, 0),
		"renew empty node":      check(&seqsvrv1.RenewWorkerCommand{NowMs: 1}, 0),
		"renew negative id":     check(&seqsvrv1.RenewWorkerCommand{NodeId: "n", WorkerId: -1, NowMs: 1}, 0),
		"member without addr":   check(&seqsvrv1.SetMemberCommand{Id: "n", HttpAddr: "h"}, 0),
		"step above max":        check(&seqsvrv1.CreateTagCommand{Tag: "a", Step: 11}, 10),
		"update step above max": check(&seqsvrv1.UpdateTagCommand{Tag: "a", Step: 11}, 10),
		"size above max":        check(&seqsvrv1.ReserveSegmentCommand{Tag: "a", Size: 11}, 10),
		"default max":           check(&seqsvrv1.ReserveSegmentCommand{Tag: "a", Size: DefaultMaxSegmentSize + 1}, DefaultMaxSegmentSize),
		"unset max":             check(&seqsvrv1.ReserveSegmentCommand{Tag: "a", Size: DefaultMaxSegmentSize + 1}, 0),
		"delete bad tag":        check(&seqsvrv1.DeleteTagCommand{Tag: "a b"}, 0),
		"remove empty id":       check(&seqsvrv1.RemoveMemberCommand{}, 0),
	} {
		if !errors.Is(err, errs.InvalidArgument) {
			t.Errorf("%s: err %v, want invalid argument", name, err)
		}
	}
	if err := check(&seqsvrv1.CreateTagCommand{Tag: "a", Start: 5, Step: 0}, DefaultMaxSegmentSize); err != nil {
		t.Errorf("valid create: %v", err)
	}
	// The limit itself is allowed.
	for name, err := range map[string]error{
		"step at max":        check(&seqsvrv1.CreateTagCommand{Tag: "a", Step: 10}, 10),
		"update step at max": check(&seqsvrv1.UpdateTagCommand{Tag: "a", Step: 10}, 10),
		"size at max":        check(&seqsvrv1.ReserveSegmentCommand{Tag: "a", Size: 10}, 10),
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
