package fsm

import (
	"encoding/base64"
	"fmt"
	"math"
	"sort"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// Limits on request fields. They keep one bad request from bloating the
// Raft log or the snapshot.
const (
	MaxDescriptionLen = 1024
	MaxKeyLen         = 256 // request_id, node_id, instance_id
	DefaultStep       = 1000
	// DefaultMaxSegmentSize bounds a ReserveSegment size and a tag's step
	// (storage.Config.MaxSegmentSize): one call can never take a large
	// share of a tag's ID space.
	DefaultMaxSegmentSize = 100_000_000
	DefaultPageSize       = 100
	MaxPageSize           = 1000
)

// ValidateKey refuses a key field (request_id, node_id, instance_id, member
// ids and addresses) that is empty when required or over MaxKeyLen.
func ValidateKey(field, v string, required bool) error {
	if required && v == "" {
		return fmt.Errorf("%w: %s must not be empty", errs.InvalidArgument, field)
	}
	if len(v) > MaxKeyLen {
		return fmt.Errorf("%w: %s is %d bytes long, the limit is %d", errs.InvalidArgument, field, len(v), MaxKeyLen)
	}
	return nil
}

func validateNonNegative(field string, v int64) error {
	if v < 0 {
		return fmt.Errorf("%w: %s must not be negative, got %d", errs.InvalidArgument, field, v)
	}
	return nil
}

func validateDescription(d string) error {
	if len(d) > MaxDescriptionLen {
		return fmt.Errorf("%w: description is %d bytes long, the limit is %d", errs.InvalidArgument, len(d), MaxDescriptionLen)
	}
	return nil
}

// validateSize refuses a size or step above maxSize (storage.Config.MaxSegmentSize).
func validateSize(field string, v, maxSize int64) error {
	if v > maxSize {
		return fmt.Errorf("%w: %s %d is above the store's --max-segment-size %d", errs.InvalidArgument, field, v, maxSize)
	}
	return nil
}

// The checks of the commands a caller's request becomes, registered with
// them (commands.go) and run by CheckCommand before the command is
// proposed. A command's fields are its request's, under the same names.

// checkCreateTag checks a CreateTag; lim.MaxSegmentSize bounds its step.
func checkCreateTag(c *seqsvrv1.CreateTagCommand, lim Limits) error {
	if err := spec.CheckTag(c.GetTag()); err != nil {
		return err
	}
	if err := validateNonNegative("start", c.GetStart()); err != nil {
		return err
	}
	if err := validateNonNegative("step", c.GetStep()); err != nil {
		return err
	}
	if err := validateSize("step", c.GetStep(), lim.MaxSegmentSize); err != nil {
		return err
	}
	if c.GetStart() == math.MaxInt64 {
		return fmt.Errorf("%w: start %d leaves no IDs to hand out", errs.InvalidArgument, c.GetStart())
	}
	return validateDescription(c.GetDescription())
}

// checkUpdateTag checks an UpdateTag like checkCreateTag.
func checkUpdateTag(c *seqsvrv1.UpdateTagCommand, lim Limits) error {
	if err := spec.CheckTag(c.GetTag()); err != nil {
		return err
	}
	if err := validateNonNegative("step", c.GetStep()); err != nil {
		return err
	}
	if err := validateSize("step", c.GetStep(), lim.MaxSegmentSize); err != nil {
		return err
	}
	return validateDescription(c.GetDescription())
}

// checkDeleteTag checks a DeleteTag's tag name.
func checkDeleteTag(c *seqsvrv1.DeleteTagCommand, _ Limits) error {
	return spec.CheckTag(c.GetTag())
}

// checkReserveSegment checks a ReserveSegment; lim.MaxSegmentSize bounds
// its size.
func checkReserveSegment(c *seqsvrv1.ReserveSegmentCommand, lim Limits) error {
	if err := spec.CheckTag(c.GetTag()); err != nil {
		return err
	}
	if err := validateNonNegative("size", c.GetSize()); err != nil {
		return err
	}
	if err := validateSize("size", c.GetSize(), lim.MaxSegmentSize); err != nil {
		return err
	}
	return ValidateKey("request_id", c.GetRequestId(), false)
}

// checkRegisterWorker checks a RegisterWorker.
func checkRegisterWorker(c *seqsvrv1.RegisterWorkerCommand, _ Limits) error {
	if err := ValidateKey("node_id", c.GetNodeId(), true); err != nil {
		return err
	}
	if err := ValidateKey("instance_id", c.GetInstanceId(), false); err != nil {
		return err
	}
	return validateCallerClock(c.GetNowMs())
}

// checkRenewWorker checks a RenewWorker.
func checkRenewWorker(c *seqsvrv1.RenewWorkerCommand, _ Limits) error {
	if err := ValidateKey("node_id", c.GetNodeId(), true); err != nil {
		return err
	}
	if err := ValidateKey("instance_id", c.GetInstanceId(), false); err != nil {
		return err
	}
	if err := validateNonNegative("worker_id", c.GetWorkerId()); err != nil {
		return err
	}
	return validateCallerClock(c.GetNowMs())
}

// validateCallerClock refuses a worker call's now_ms that is no Unix time.
func validateCallerClock(nowMs int64) error {
	if nowMs <= 0 {
		return fmt.Errorf("%w: now_ms must be the caller's clock in Unix milliseconds, got %d", errs.InvalidArgument, nowMs)
	}
	return nil
}

// checkSetMember checks AddMember's ID and addresses.
func checkSetMember(c *seqsvrv1.SetMemberCommand, _ Limits) error {
	if err := ValidateKey("id", c.GetId(), true); err != nil {
		return err
	}
	if err := ValidateKey("raft_addr", c.GetRaftAddr(), true); err != nil {
		return err
	}
	return ValidateKey("http_addr", c.GetHttpAddr(), true)
}

// checkRemoveMember checks RemoveMember's ID.
func checkRemoveMember(c *seqsvrv1.RemoveMemberCommand, _ Limits) error {
	return ValidateKey("id", c.GetId(), true)
}

// PageParams resolves ListTags and ListSpaces paging: the size (default
// 100, at most 1000) and the name to start after (the token is that name,
// base64url).
func PageParams(pageSize int32, token string) (size int, after string, err error) {
	size = int(pageSize)
	switch {
	case size == 0:
		size = DefaultPageSize
	case size < 0 || size > MaxPageSize:
		return 0, "", fmt.Errorf("%w: page_size must be 0..%d, got %d", errs.InvalidArgument, MaxPageSize, size)
	}
	if token != "" {
		b, derr := base64.RawURLEncoding.DecodeString(token)
		if derr != nil || spec.CheckTag(string(b)) != nil {
			return 0, "", fmt.Errorf("%w: malformed page_token", errs.InvalidArgument)
		}
		after = string(b)
	}
	return size, after, nil
}

// page is the next page of m's names after after, at most size of them, in
// order, and the token of the page after it ("" at the end).
func page[V any](m map[string]V, size int, after string) (names []string, next string) {
	for name := range m {
		if name > after {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) > size {
		names = names[:size]
		next = pageToken(names[size-1])
	}
	return names, next
}

func pageToken(lastName string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(lastName))
}
