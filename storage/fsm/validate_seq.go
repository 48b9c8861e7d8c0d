package fsm

import (
	"fmt"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
)

// Checks of the per-key sequence commands (registered in commands.go).
// The FSM checks again what depends on the state (the space exists, a
// section is in it, ownership).

// checkCreateSpace checks a CreateSpace, its shape as the FSM will
// (spaceShape).
func checkCreateSpace(r *seqsvrv1.CreateSpaceCommand, _ Limits) error {
	if err := spec.CheckTag(r.GetSpace()); err != nil {
		return err
	}
	if _, _, _, err := spaceShape(r.GetKeyCount(), r.GetSectionSize(), r.GetStep()); err != nil {
		return err
	}
	return validateDescription(r.GetDescription())
}

// validateSeqCaller checks the node and instance every allocsvr call names.
func validateSeqCaller(node, instance string) error {
	if err := ValidateKey("node_id", node, true); err != nil {
		return err
	}
	return ValidateKey("instance_id", instance, true)
}

// checkSeqHeartbeat checks a SeqHeartbeat.
func checkSeqHeartbeat(r *seqsvrv1.SeqHeartbeatCommand, _ Limits) error {
	if err := validateSeqCaller(r.GetNodeId(), r.GetInstanceId()); err != nil {
		return err
	}
	if err := ValidateKey("url", r.GetUrl(), false); err != nil {
		return err
	}
	if n := len(r.GetReleased()); n > spec.MaxRaiseSections {
		return fmt.Errorf("%w: %d released spans, the limit is %d", errs.InvalidArgument, n, spec.MaxRaiseSections)
	}
	for _, s := range r.GetReleased() {
		if err := spec.CheckTag(s.GetSpace()); err != nil {
			return err
		}
		if s.GetFirstSection() > s.GetLastSection() {
			return fmt.Errorf("%w: released span [%d, %d] of space %q is empty", errs.InvalidArgument, s.GetFirstSection(), s.GetLastSection(), s.GetSpace())
		}
	}
	return nil
}

// checkRaiseSections checks a RaiseSections.
func checkRaiseSections(r *seqsvrv1.RaiseSectionsCommand, _ Limits) error {
	if err := validateSeqCaller(r.GetNodeId(), r.GetInstanceId()); err != nil {
		return err
	}
	if err := spec.CheckTag(r.GetSpace()); err != nil {
		return err
	}
	items := r.GetSections()
	if len(items) == 0 || len(items) > spec.MaxRaiseSections {
		return fmt.Errorf("%w: %d sections, want 1..%d", errs.InvalidArgument, len(items), spec.MaxRaiseSections)
	}
	seen := make(map[uint64]struct{}, len(items))
	for _, it := range items {
		if _, dup := seen[it.GetSection()]; dup {
			return fmt.Errorf("%w: section %d listed twice", errs.InvalidArgument, it.GetSection())
		}
		seen[it.GetSection()] = struct{}{}
		if it.GetKnownMax() < -1 {
			return fmt.Errorf("%w: known_max of section %d is %d; -1 (first load) or a max_seq", errs.InvalidArgument, it.GetSection(), it.GetKnownMax())
		}
	}
	return nil
}
