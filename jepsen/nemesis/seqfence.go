package nemesis

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
)

// SeqFenceSkew is the aimed fault on the per-key fence margin
// (MarginSeqFence). An allocsvr A fences itself --seq-fence-margin before
// its lease ends, counted from its heartbeat's send on its own monotonic
// clock; the store moves A's sections once the lease, stamped with the
// granting leader's wall clock, has passed on the current leader's wall
// clock. The margin is all that covers a later leader whose clock runs
// ahead of the one that granted the lease.
//
// So: the store followers' clocks go ahead by 0.9 of A's margin (the old
// leader's stays true: every pair of members agrees within the margin, as
// docs/design-seq.md assumes); A is cut off from every store right after it
// received a heartbeat's answer (clients still reach it, and it serves
// until its own fence); the leader is stopped with SIGTERM, which hands
// leadership to a follower, so a skewed member leads long before A's
// lease ends. That leader expires A's lease 0.9 margin early in true
// time, and the next heartbeat of another allocsvr takes A's sections
// while only the last tenth of the margin (and the heartbeat's trip)
// separates their first values from A's last. An allocsvr that uses less
// than its margin serves A's keys below values another one already
// answered (checker.SeqOrderName).
//
// Inside only: the design claims no detection of a store leader whose
// clock runs ahead by more than the margin; beyond it guarantee 8 is not
// claimed, so there is nothing an outside aim could check.
//
// It needs network namespaces (A must keep serving while cut off from
// the stores) and a store member to hand leadership to; without them it
// skips.
const SeqFenceSkew = "seq-fence-skew"

// seqFenceMarginFlag is the allocsvr flag the fault reads A's margin from.
const seqFenceMarginFlag = "--seq-fence-margin"

// seqFenceSkew: see SeqFenceSkew.
func seqFenceSkew(ctx context.Context, e *Env, r *rand.Rand) error {
	const name = SeqFenceSkew
	if e.Net == nil {
		e.Log.Skip(name, "needs network namespaces (the owner must serve while cut off from the stores)")
		return nil
	}
	e.memberMu.Lock() // the leader goes down: no membership change meanwhile
	defer e.memberMu.Unlock()
	for _, s := range e.C.Stores {
		if !s.Running() {
			e.Log.Skip(name, "%s is down: stopping the leader would take the quorum", s.Name)
			return nil
		}
	}
	l, err := e.leader(ctx)
	if e.skipped(name, err) {
		return nil
	}
	a := e.seqOwner(ctx, r, l)
	if a == nil {
		e.Log.Skip(name, "no running allocsvr owns a section of space %q", e.SeqSpace)
		return nil
	}
	margin, err := seqFenceMarginOf(a)
	if e.skipped(name, err) {
		return nil
	}
	skew := Aim(margin, Inside)
	var followers []*launch.Proc
	for _, s := range e.C.Stores {
		if s != l {
			followers = append(followers, s)
		}
	}
	// Every follower, since the handover picks the furthest one.
	for _, f := range followers {
		if err := e.SetClock(ctx, f, skew); err != nil {
			e.Log.Error(name, f.Name, err)
			e.trueClocks(followers)
			return nil
		}
	}
	stores := names(e.C.Stores)
	cutAt, ok := e.cutAfterRenewal(ctx, a, stores)
	if !ok {
		_ = e.Net.Uncut([]string{a.Name}, stores)
		e.trueClocks(followers)
		if ctx.Err() == nil {
			e.Log.Skip(name, "%s renewed no per-key lease within 2 s; not cut", a.Name)
		}
		return nil
	}
	// What each side believes, read after the cut: A's fence from its own
	// status, the store's lease from the leader that granted it.
	fence, fenceOK := e.seqFenceOf(ctx, a)
	storeEnd, moved0 := e.seqLeaseOf(ctx, l, a.NodeID)
	stopped := make(chan error, 1)
	go func() { stopped <- l.Stop() }()
	nl, leadAt := e.otherLeader(ctx, l, 5*time.Second)
	skewedEnd := storeEnd.Add(-skew) // when the new leader expires A's lease, in true time
	var b strings.Builder
	fmt.Fprintf(&b, "clock %+v on %s; %s cut from all stores %s after its heartbeat's answer; %s SIGTERMed (hands over)",
		skew, strings.Join(names(followers), ","), a.Name, cutAt.lag, l.Name)
	switch {
	case nl != nil:
		fmt.Fprintf(&b, "; %s leads %s after the cut", nl.Name, leadAt.Sub(cutAt.at).Round(time.Millisecond))
	case ctx.Err() != nil:
		b.WriteString("; the run ended before another member led")
	default:
		b.WriteString("; no other leader within 5 s")
	}
	if !storeEnd.IsZero() {
		fmt.Fprintf(&b, "; store lease ends %s after the cut (%s by the skewed clock)",
			storeEnd.Sub(cutAt.at).Round(time.Millisecond), skewedEnd.Sub(cutAt.at).Round(time.Millisecond))
	}
	if fenceOK {
		fmt.Fprintf(&b, "; %s fences %s after the cut", a.Name, fence.Sub(cutAt.at).Round(time.Millisecond))
	}
	if fenceOK && !storeEnd.IsZero() {
		// The fault's window: how long after the skewed expiry A may
		// still serve (negative: A fenced first, as its margin must).
		fmt.Fprintf(&b, "; fence - skewed expiry %s", fence.Sub(skewedEnd).Round(time.Millisecond))
	}
	// The aim landed when a skewed member led before A's lease ended by
	// its clock; only then is the margin event recorded.
	landed := nl != nil && !storeEnd.IsZero() && leadAt.Before(skewedEnd)
	if !landed {
		b.WriteString(" (missed: no skewed leader before the skewed expiry)")
	}
	e.Log.Inject(name, a.Name, "%s", b.String())
	if landed {
		e.Log.Margin(name, a.Name, MarginSeqFence, Inside, skew, margin)
	}

	// Watch the move, until a while after both the fence and the expiry.
	until := time.Now().Add(e.SeqLeaseTTL + time.Second)
	if !storeEnd.IsZero() {
		until = storeEnd.Add(time.Second)
	}
	if nl != nil && len(moved0) > 0 {
		if to, at, ok := e.awaitSeqMove(ctx, nl, a.NodeID, moved0, until); ok {
			msg := fmt.Sprintf("a section of %s's moved to %s %s after the cut", a.Name, to, at.Sub(cutAt.at).Round(time.Millisecond))
			if d := fence.Sub(at).Round(time.Millisecond); fenceOK && d > 0 {
				msg += fmt.Sprintf(", %s before %s's fence", d, a.Name)
			} else if fenceOK {
				msg += fmt.Sprintf(", %s after %s's fence", -d, a.Name)
			}
			e.Log.Inject(name, a.Name, "%s", msg)
		}
	}
	sleep(ctx, time.Until(until))

	errU := e.Net.Uncut([]string{a.Name}, stores)
	e.trueClocks(followers)
	if err := <-stopped; err != nil {
		e.Log.Error(name, l.Name, err)
	}
	if err := l.Start(context.Background()); err != nil {
		return err
	}
	// Ready before the fault returns, even as the run ends: the final
	// checks read every member.
	if err := e.waitReady(context.Background(), l, 20*time.Second); err != nil {
		e.Log.Error(name, l.Name, err)
	}
	e.Log.Heal(name, a.Name, "uncut, clocks of %s back to true time, %s restarted", strings.Join(names(followers), ","), l.Name)
	return errU
}

// seqFenceMarginOf is a's --seq-fence-margin, read from its arguments
// (the last one counts, as with any flag): the margin of the process
// under attack, whatever the run configured.
func seqFenceMarginOf(a *launch.Proc) (time.Duration, error) {
	args := a.Args()
	v, found := "", false
	for i, arg := range args {
		if w, ok := strings.CutPrefix(arg, seqFenceMarginFlag+"="); ok {
			v, found = w, true
		} else if arg == seqFenceMarginFlag && i+1 < len(args) {
			v, found = args[i+1], true
		}
	}
	if !found {
		return 0, fmt.Errorf("%s runs without %s", a.Name, seqFenceMarginFlag)
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s's %s %q: not a positive duration", a.Name, seqFenceMarginFlag, v)
	}
	return d, nil
}

// trueClocks puts ps back on true time; a member that does not answer is
// logged (a restart would put it back too).
func (e *Env) trueClocks(ps []*launch.Proc) {
	for _, p := range ps {
		if err := e.SetClock(context.Background(), p, 0); err != nil {
			e.Log.Error(SeqFenceSkew, p.Name, err)
		}
	}
}

// seqOwner is a random running original allocsvr that owns a section of
// Env.SeqSpace in l's routing table with no handover pending; nil if none.
func (e *Env) seqOwner(ctx context.Context, r *rand.Rand, l *launch.Proc) *launch.Proc {
	runs := e.routing(ctx, l)
	var owners []*launch.Proc
	for _, a := range e.C.Allocs {
		if !a.Running() || a.NodeID == ExtraAlloc {
			continue
		}
		if slices.ContainsFunc(runs, func(s *seqsvrv1.SectionRange) bool {
			return s.GetOwner() == a.NodeID && s.GetNextOwner() == ""
		}) {
			owners = append(owners, a)
		}
	}
	if len(owners) == 0 {
		return nil
	}
	return owners[r.Intn(len(owners))]
}

// routing is Env.SeqSpace's routing table read through p; nil if the
// read failed.
func (e *Env) routing(ctx context.Context, p *launch.Proc) []*seqsvrv1.SectionRange {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	res, err := e.C.StoreClient(p).GetRouting(cctx, connect.NewRequest(&seqsvrv1.GetRoutingRequest{Space: e.SeqSpace}))
	if err != nil {
		return nil
	}
	return res.Msg.GetSections()
}

// cutMoment is when a cut landed and how long after the heartbeat answer
// that preceded it.
type cutMoment struct {
	at  time.Time
	lag time.Duration
}

// cutAfterRenewal watches a's per-key lease in its status and cuts it from
// stores the moment a heartbeat's answer renewed it: the store's last
// lease of a is then the one a fenced by, and no heartbeat whose answer
// the cut drops extends the store's lease past a's fence. Packets from a
// are blocked first: they carry the next heartbeat. False if no renewal
// was seen within 2 s, or the cut failed (logged).
func (e *Env) cutAfterRenewal(ctx context.Context, a *launch.Proc, stores []string) (cutMoment, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	prev := int64(-1)
	for ctx.Err() == nil {
		left, ok := e.seqLeaseLeft(ctx, a)
		switch {
		case !ok:
			prev = -1
		case prev >= 0 && left > prev+20:
			seen := time.Now()
			for _, s := range stores {
				if err := e.Net.Block(a.Name, s); err != nil {
					e.Log.Error(SeqFenceSkew, a.Name, err)
					return cutMoment{}, false
				}
			}
			at := time.Now()
			if err := e.Net.Cut([]string{a.Name}, stores); err != nil {
				e.Log.Error(SeqFenceSkew, a.Name, err)
				return cutMoment{}, false
			}
			return cutMoment{at: at, lag: at.Sub(seen).Round(time.Millisecond)}, true
		default:
			prev = left
		}
		sleep(ctx, 5*time.Millisecond)
	}
	return cutMoment{}, false
}

// seqLeaseLeft is a's per-key lease_left_ms from its status; false if the
// lease is not valid or the status did not answer.
func (e *Env) seqLeaseLeft(ctx context.Context, a *launch.Proc) (int64, bool) {
	cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	res, err := e.C.AllocClient(a).Status(cctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
	if err != nil || !res.Msg.GetSeq().GetLeaseValid() {
		return 0, false
	}
	return res.Msg.GetSeq().GetLeaseLeftMs(), true
}

// seqFenceOf is when a stops serving its sections, by its status.
func (e *Env) seqFenceOf(ctx context.Context, a *launch.Proc) (time.Time, bool) {
	asked := time.Now()
	left, ok := e.seqLeaseLeft(ctx, a)
	if !ok {
		return time.Time{}, false
	}
	return asked.Add(time.Duration(left) * time.Millisecond), true
}

// seqLeaseOf is node's per-key lease end in l's routing table, as a time
// on this process's clock (l's is true), and the first sections of the
// runs it owns; zero if it owns none or the read failed.
func (e *Env) seqLeaseOf(ctx context.Context, l *launch.Proc, node string) (time.Time, []uint64) {
	var end int64
	var firsts []uint64
	for _, s := range e.routing(ctx, l) {
		if s.GetOwner() == node {
			end = s.GetLeaseExpiresMs()
			firsts = append(firsts, s.GetFirstSection())
		}
	}
	if end == 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(end), firsts
}

// otherLeader waits up to d for a store other than old to lead.
func (e *Env) otherLeader(ctx context.Context, old *launch.Proc, d time.Duration) (*launch.Proc, time.Time) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for ctx.Err() == nil {
		for _, s := range e.C.Stores {
			if s == old || !s.Running() {
				continue
			}
			cctx, ccancel := context.WithTimeout(ctx, 300*time.Millisecond)
			st, err := e.C.Status(cctx, s)
			ccancel()
			if err == nil && st.GetLeaderId() == st.GetNodeId() {
				return s, time.Now()
			}
		}
		sleep(ctx, 10*time.Millisecond)
	}
	return nil, time.Time{}
}

// awaitSeqMove polls l's routing table until one of the sections in
// firsts has an owner other than node, until the deadline; it returns the
// new owner and when the move was seen.
func (e *Env) awaitSeqMove(ctx context.Context, l *launch.Proc, node string, firsts []uint64, until time.Time) (string, time.Time, bool) {
	ctx, cancel := context.WithDeadline(ctx, until)
	defer cancel()
	for ctx.Err() == nil {
		for _, s := range e.routing(ctx, l) {
			for _, f := range firsts {
				if f >= s.GetFirstSection() && f <= s.GetLastSection() && s.GetOwner() != "" && s.GetOwner() != node {
					return s.GetOwner(), time.Now(), true
				}
			}
		}
		sleep(ctx, 10*time.Millisecond)
	}
	return "", time.Time{}, false
}
