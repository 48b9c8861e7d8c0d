package backup

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/spec"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// ErrInvalid: a backup whose frame and checksum are intact but whose
// contents break the store's rules (the checksum detects accidents, not
// edits). Validate names each problem.
var ErrInvalid = errs.New(errs.InvalidArgument, "backup file holds an invalid state")

// The bounds Validate applies to what a backup says about the lost
// cluster.
const (
	// MaxClockSkew is how far in the future of the reader's clock a
	// backup's time (and a lease in it) may be: the leader's clock may
	// run ahead of this one.
	MaxClockSkew = time.Minute
	// MaxStampAhead is how far past the backup's time a worker's last
	// timestamp may be: a takeover sets it one lease ahead.
	MaxStampAhead = 24 * time.Hour
)

// Problems lists every way b breaks the rules, as read at now: the
// state's (fsm.CheckState: names, uniqueness, ranges, counts) and the
// backup's own: a time neither 0 nor past now by more than MaxClockSkew,
// a max_segment_size of 1..fsm.MaxStepLimit, lease TTLs of
// 1ms..spec.MaxLeaseTTL, and no lease or timestamp in the state beyond
// what those allow. nil for a valid backup. It never panics and
// allocates in proportion to b.
func Problems(b *seqsvrv1.Backup, now time.Time) []error {
	var out []error
	add := func(format string, args ...any) { out = append(out, fsm.Invalid(format, args...)) }
	if err := fsm.ValidateKey("cluster_id", b.GetClusterId(), true); err != nil {
		add("backup: %v", err)
	}
	at := b.GetLeaderTimeMs()
	switch nowMs := now.UnixMilli(); {
	case at <= 0:
		add("backup time is %d ms (%s): a backup is taken at a real time", at, stamp(at))
		at = 0
	case at > nowMs+MaxClockSkew.Milliseconds():
		add("backup time %s is %s ahead of this clock (%s), more than the %s allowed", stamp(at),
			time.Duration(at-nowMs)*time.Millisecond, stamp(nowMs), MaxClockSkew)
	}
	if s := b.GetMaxSegmentSize(); s < 1 || s > fsm.MaxStepLimit {
		add("max_segment_size %d is outside 1..%d", s, fsm.MaxStepLimit)
	}
	ttl := map[string]int64{}
	for _, l := range []struct {
		name string
		ms   int64
	}{{"worker_lease_ttl_ms", b.GetWorkerLeaseTtlMs()}, {"seq_lease_ttl_ms", b.GetSeqLeaseTtlMs()}} {
		if l.ms < 1 || l.ms > spec.MaxLeaseTTL.Milliseconds() {
			add("%s %d (%s) is outside 1ms..%s", l.name, l.ms, time.Duration(min(l.ms, 1<<40))*time.Millisecond, spec.MaxLeaseTTL)
			l.ms = spec.MaxLeaseTTL.Milliseconds()
		}
		ttl[l.name] = l.ms
	}
	st := b.GetState()
	switch {
	case st == nil:
		add("the backup holds no state")
		return out
	case empty(st):
		add("the backup's state is empty")
		return out
	case st.GetClusterId() != b.GetClusterId():
		add("the state's cluster_id %q is not the backup's %q", st.GetClusterId(), b.GetClusterId())
	}
	out = append(out, fsm.CheckState(st)...)
	if at > 0 {
		skew := MaxClockSkew.Milliseconds()
		lease, stampMs, seq := fsm.LeaseEnds(st)
		if lease > at+ttl["worker_lease_ttl_ms"]+skew {
			add("a worker lease ends at %s, more than worker_lease_ttl_ms past the backup's time %s", stamp(lease), stamp(at))
		}
		if stampMs > at+MaxStampAhead.Milliseconds() {
			add("a worker's last timestamp is %s, more than %s past the backup's time %s", stamp(stampMs), MaxStampAhead, stamp(at))
		}
		if seq > at+ttl["seq_lease_ttl_ms"]+skew {
			add("a per-key member's lease ends at %s, more than seq_lease_ttl_ms past the backup's time %s", stamp(seq), stamp(at))
		}
	}
	return out
}

// Validate is nil for a valid backup, else ErrInvalid naming every
// problem Problems finds.
func Validate(b *seqsvrv1.Backup, now time.Time) error {
	ps := Problems(b, now)
	if len(ps) == 0 {
		return nil
	}
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = errs.Detail(p)
	}
	return fmt.Errorf("%w: %d problem(s): %s", ErrInvalid, len(ps), strings.Join(msgs, "; "))
}

// empty reports a state holding nothing but its format version: no
// cluster ever wrote it.
func empty(st *seqsvrv1.FSMSnapshot) bool {
	c := proto.Clone(st).(*seqsvrv1.FSMSnapshot)
	c.FormatVersion = 0
	return proto.Size(c) == 0
}

// IsInvalid reports whether err is Validate's.
func IsInvalid(err error) bool { return errors.Is(err, ErrInvalid) }

// stamp is a Unix millisecond time as RFC 3339, or the number when it is
// outside the years 0..9999 that the format can show.
func stamp(ms int64) string {
	t := time.UnixMilli(ms).UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return fmt.Sprintf("%d ms since 1970", ms)
	}
	return t.Format(time.RFC3339Nano)
}
