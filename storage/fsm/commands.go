package fsm

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// The Raft commands. Each case of seqsvr.v1.Command's oneof is registered
// once, below, with everything this binary knows of it: the check the
// proposing member runs before proposing it, the cluster version it needs,
// and how Apply applies it. Apply, CommandLevel and CheckCommand all read
// this one table, so a case cannot be applied without a level, nor
// proposed without its check. A case not in it (a newer release's, or one
// whose number this binary's proto does not declare at all) is unknown:
// refused before it is proposed, and a member that meets one in its log
// stops (Machine's OnFatal) rather than skip it.

// Limits are the proposing member's settings that a command's check
// reads. Only the check reads them, never Apply: members may be
// configured differently, and Apply must give every member the same state.
type Limits struct {
	// MaxSegmentSize bounds a ReserveSegment size and a tag's step
	// (storage.Config.MaxSegmentSize; 0 is DefaultMaxSegmentSize).
	MaxSegmentSize int64
}

// command is one registered case of the Command oneof.
type command struct {
	field protoreflect.FieldDescriptor // the oneof case (name and number)
	// level is the cluster version the command needs (CommandLevel).
	level uint32
	// check refuses a command the proposer must not propose, with an
	// errs.InvalidArgument error naming the field; it never reads state.
	check func(c *seqsvrv1.Command, lim Limits) error
	// apply applies it to the state; now is Command.now_ms.
	apply func(st *fsmState, now int64, c *seqsvrv1.Command) Result
}

// commands is every command this binary proposes and applies, keyed by
// its field number in the oneof; filled once, read only.
var commands = registry(
	entry("create_tag", (*seqsvrv1.Command).GetCreateTag, BaseLevel, checkCreateTag, (*fsmState).applyCreateTag),
	entry("update_tag", (*seqsvrv1.Command).GetUpdateTag, BaseLevel, checkUpdateTag, (*fsmState).applyUpdateTag),
	entry("delete_tag", (*seqsvrv1.Command).GetDeleteTag, BaseLevel, checkDeleteTag,
		func(st *fsmState, _ int64, c *seqsvrv1.DeleteTagCommand) Result { return st.applyDeleteTag(c) }),
	entry("reserve_segment", (*seqsvrv1.Command).GetReserveSegment, BaseLevel, checkReserveSegment, (*fsmState).applyReserveSegment),
	entry("register_worker", (*seqsvrv1.Command).GetRegisterWorker, BaseLevel, checkRegisterWorker, (*fsmState).applyRegisterWorker),
	entry("renew_worker", (*seqsvrv1.Command).GetRenewWorker, BaseLevel, checkRenewWorker, (*fsmState).applyRenewWorker),
	entry("set_member", (*seqsvrv1.Command).GetSetMember, BaseLevel, checkSetMember,
		func(st *fsmState, _ int64, c *seqsvrv1.SetMemberCommand) Result { return st.applySetMember(c) }),
	entry("remove_member", (*seqsvrv1.Command).GetRemoveMember, BaseLevel, checkRemoveMember,
		func(st *fsmState, _ int64, c *seqsvrv1.RemoveMemberCommand) Result { return st.applyRemoveMember(c) }),
	// The Noop carries the cluster ID and the cluster-version raise, both
	// at BaseLevel: the base release applies a Noop as a no-op. They stay
	// in the Noop rather than in commands of their own because every new
	// leader proposes the cluster ID whatever the cluster version, while
	// base-release members may still be in the cluster: a command of its
	// own would be unknown to them, and they stop on an unknown command.
	// The leader builds both; there is nothing of a caller's to check.
	entry("noop", (*seqsvrv1.Command).GetNoop, BaseLevel, nil,
		func(st *fsmState, _ int64, c *seqsvrv1.NoopCommand) Result { return st.applyNoop(c) }),
	entry("create_space", (*seqsvrv1.Command).GetCreateSpace, BaseLevel, checkCreateSpace, (*fsmState).applyCreateSpace),
	entry("seq_heartbeat", (*seqsvrv1.Command).GetSeqHeartbeat, BaseLevel, checkSeqHeartbeat, (*fsmState).applySeqHeartbeat),
	entry("raise_sections", (*seqsvrv1.Command).GetRaiseSections, BaseLevel, checkRaiseSections, (*fsmState).applyRaiseSections),
)

// cmdOneof is Command's oneof of the commands.
var cmdOneof = (&seqsvrv1.Command{}).ProtoReflect().Descriptor().Oneofs().ByName("cmd")

// entry registers the case name of the oneof, whose message get returns.
// A nil check checks nothing. A name that is not a case of the oneof, or
// a get of another case, panics when the package loads (a test catches
// it before any binary ships).
func entry[P proto.Message](name protoreflect.Name, get func(*seqsvrv1.Command) P, level uint32,
	check func(P, Limits) error, apply func(*fsmState, int64, P) Result) command {
	fd := cmdOneof.Fields().ByName(name)
	var zero P
	if fd == nil || fd.Message().FullName() != zero.ProtoReflect().Descriptor().FullName() {
		panic(fmt.Sprintf("fsm: register %q: not a case of %s holding %s", name, cmdOneof.FullName(), zero.ProtoReflect().Descriptor().FullName()))
	}
	c := command{field: fd, level: level,
		apply: func(st *fsmState, now int64, c *seqsvrv1.Command) Result { return apply(st, now, get(c)) }}
	c.check = func(*seqsvrv1.Command, Limits) error { return nil }
	if check != nil {
		c.check = func(c *seqsvrv1.Command, lim Limits) error { return check(get(c), lim) }
	}
	return c
}

func registry(entries ...command) map[protoreflect.FieldNumber]command {
	m := make(map[protoreflect.FieldNumber]command, len(entries))
	for _, c := range entries {
		if _, dup := m[c.field.Number()]; dup {
			panic(fmt.Sprintf("fsm: command %q registered twice", c.field.Name()))
		}
		m[c.field.Number()] = c
	}
	return m
}

// ErrUnknownCommand: a Raft command this binary does not know (a newer
// release's). It is never proposed; a member that meets one in its log
// stops.
var ErrUnknownCommand = errs.New(errs.FailedPrecondition, "unknown raft command")

// lookup is cmd's registration, or an ErrUnknownCommand naming what cmd
// holds instead.
func lookup(cmd *seqsvrv1.Command) (command, error) {
	m := cmd.ProtoReflect()
	fd := m.WhichOneof(cmdOneof)
	if fd != nil {
		if c, ok := commands[fd.Number()]; ok {
			return c, nil
		}
	}
	return command{}, fmt.Errorf("%w: %s, which this binary (feature level %d) does not apply", ErrUnknownCommand, describeUnknown(m, fd), Level)
}

// describeUnknown names what an unknown command holds: the case this
// binary's proto declares but does not register, or else the field
// numbers it does not know (an entry of a newer release decodes with the
// oneof unset and its case kept as an unknown field).
func describeUnknown(m protoreflect.Message, fd protoreflect.FieldDescriptor) string {
	if fd != nil {
		return fmt.Sprintf("command %s (field %d)", fd.Name(), fd.Number())
	}
	var nums []string
	for b := m.GetUnknown(); len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			break
		}
		b = b[n:]
		nums = append(nums, fmt.Sprint(num))
		if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
			break
		}
		b = b[n:]
	}
	if len(nums) == 0 {
		return "a command with no case set"
	}
	return fmt.Sprintf("a command of field %s, not in this binary's seqsvr.v1.Command", strings.Join(nums, ", "))
}

// CommandLevel is the cluster version cmd needs: the lowest level at
// which every member applies it the same way, as registered with it (its
// command and the fields it uses). The server refuses to propose it below
// that level (Store.requireLevel), and an unknown command always
// (ErrUnknownCommand). Every command the base release knows is BaseLevel,
// the cluster-version raise included; TestCommandLevelKnowsEveryField
// fails when raft.proto gains a command or field nobody gave a level.
func CommandLevel(cmd *seqsvrv1.Command) (uint32, error) {
	c, err := lookup(cmd)
	if err != nil {
		return 0, err
	}
	return c.level, nil
}

// CheckCommand runs cmd's registered check: what the proposing member
// refuses (errs.InvalidArgument, naming the field) before proposing it,
// an unknown command included (ErrUnknownCommand). The state machine
// checks again, in Apply, what depends on the state.
func CheckCommand(cmd *seqsvrv1.Command, lim Limits) error {
	c, err := lookup(cmd)
	if err != nil {
		return err
	}
	if lim.MaxSegmentSize == 0 {
		lim.MaxSegmentSize = DefaultMaxSegmentSize
	}
	return c.check(cmd, lim)
}
