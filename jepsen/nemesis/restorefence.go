package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
)

// The disaster aims at the restore fence (MarginRestoreLeaseWait): a
// restored or recovered cluster grants no worker ID and no section until
// the lease wait after its start, because an allocsvr of the lost cluster
// may still serve under a lease it got before the destruction.
//
//   - Inside (the restore): an allocsvr is cut off from the stores just
//     before they are killed, with a fresh lease, and keeps serving its
//     sections until its own fence; the other allocsvr asks the restored
//     cluster for every section all along. At Aim(wait, Inside) after the
//     start the nemesis asks the restored cluster for the cut-off
//     allocsvr's worker ID (RegisterWorker with its node ID, as a twin
//     would): it must be refused with the restore fence. A wait shorter
//     than the old leases lets the other allocsvr answer keys of the
//     cut-off one's sections above the jump while the cut-off one still
//     answers them below it: the per-key order checker fails.
//   - Outside (the quorum-loss recovery): an allocsvr is SIGSTOPped and
//     cut off just before the stores are killed, with a fresh lease, and
//     resumed, still cut off, at Aim(wait, Outside) after the start, when
//     the recovered cluster has given its sections to the other one. Its
//     lease, measured on its monotonic clock, has lapsed: it must answer
//     none of its keys (the nemesis asks it for one key of every section,
//     marked as forwarded so it does not pass them on, and the per-key
//     order checker sees the workload's calls).

// storeLeaseMargin is the storesvr's slack on top of the longest lease
// TTL before a restored cluster grants leases (cmd/storesvr leaseMargin,
// docs/disaster-recovery.md "Leases").
const storeLeaseMargin = 2 * time.Second

// restoreLeaseWait is the restored cluster's wait for the lost cluster's
// leases: the longest lease TTL + 2 s (the backup's TTLs are the stores'
// own in the harness).
func (e *Env) restoreLeaseWait() time.Duration {
	return max(e.LeaseTTL, e.SeqLeaseTTL) + storeLeaseMargin
}

// fenceAim is one aimed injection against the restore fence: old is the
// allocsvr of the lost cluster, cut (and paused, outside) before the kill.
type fenceAim struct {
	e     *Env
	fault string
	side  Side
	old   *launch.Proc
	cut   bool
}

// aimFence picks the old allocsvr and isolates it before the stores are
// killed: cut off from them (with namespaces), and SIGSTOPped too when
// aiming outside. Nil when there is nothing to aim with: inside needs the
// cut (the old allocsvr must keep serving), outside works with the pause
// alone.
func aimFence(e *Env, r *rand.Rand, fault string, side Side) (*fenceAim, error) {
	a := randomAlloc(e, r)
	if a == nil || !a.Running() || a.Paused() {
		e.Log.Skip(fault, "no running allocsvr to hold an old lease")
		return nil, nil
	}
	if e.Net == nil && side == Inside {
		e.Log.Skip(fault, "the restore fence's inside aim needs network namespaces (the old allocsvr must serve while cut off)")
		return nil, nil
	}
	f := &fenceAim{e: e, fault: fault, side: side, old: a}
	if e.Net != nil {
		if err := e.Net.Cut([]string{a.Name}, names(e.C.Stores)); err != nil {
			_ = e.Net.Uncut([]string{a.Name}, names(e.C.Stores))
			return nil, err
		}
		f.cut = true
	}
	if side == Outside {
		if err := a.Pause(); err != nil {
			f.release()
			return nil, err
		}
	}
	return f, nil
}

// describe is the injection's part of the disaster's inject line.
func (f *fenceAim) describe(wait time.Duration) string {
	if f == nil {
		return ""
	}
	if f.side == Inside {
		return fmt.Sprintf("; %s cut from the stores with a fresh lease (serves until its own fence), its worker ID asked for at %v of the %v wait",
			f.old.Name, Aim(wait, Inside), wait)
	}
	how := "SIGSTOP"
	if f.cut {
		how += " and cut from the stores"
	}
	return fmt.Sprintf("; %s %s with a fresh lease until %v of the %v wait", f.old.Name, how, Aim(wait, Outside), wait)
}

// release resumes and reconnects the old allocsvr.
func (f *fenceAim) release() {
	if f == nil {
		return
	}
	if f.old.Paused() {
		_ = f.old.Resume()
	}
	if f.cut {
		_ = f.e.Net.Uncut([]string{f.old.Name}, names(f.e.C.Stores))
		f.cut = false
	}
}

// strike waits until the aim's moment after start and does what the side
// does there, recording the margin event; the result is for the heal line.
func (f *fenceAim) strike(ctx context.Context, e *Env, start time.Time) string {
	if f == nil {
		return ""
	}
	wait := e.restoreLeaseWait()
	at := Aim(wait, f.side)
	if late := time.Since(start); late >= at {
		e.Log.Skip(f.fault, "the cluster was ready %v after the start, past the aim at %v", late.Round(time.Millisecond), at)
		f.release()
		return ""
	}
	sleep(ctx, time.Until(start.Add(at)))
	value := time.Since(start)
	e.Log.Margin(f.fault, f.old.Name, MarginRestoreLeaseWait, f.side, value, wait)
	var out string
	if f.side == Inside {
		out = probeFence(ctx, e, f)
		f.release()
		return out
	}
	if err := f.old.Resume(); err != nil && !errors.Is(err, launch.ErrNotRunning) {
		e.Log.Error(f.fault, f.old.Name, err)
	}
	// Let its goroutines run (and the calls queued during the pause be
	// answered or refused) before asking it.
	sleep(ctx, 300*time.Millisecond)
	out = checkFenced(ctx, e, f)
	f.release()
	return out
}

// probeFence asks the restored cluster for the old allocsvr's worker ID
// under a new instance, inside the wait: the answer must be the restore
// fence's refusal.
func probeFence(ctx context.Context, e *Env, f *fenceAim) string {
	p, err := e.leader(ctx)
	if err != nil {
		return fmt.Sprintf("; fence probe skipped: no leader: %v", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req := &seqsvrv1.RegisterWorkerRequest{NodeId: f.old.NodeID, NowMs: time.Now().UnixMilli(),
		InstanceId: fmt.Sprintf("restore-fence-probe-%d", time.Now().UnixNano())}
	resp, err := e.C.StoreClient(p).RegisterWorker(cctx, connect.NewRequest(req))
	switch {
	case err == nil:
		e.Log.Error(f.fault, f.old.Name, fmt.Errorf("restore fence broken: %s granted worker %d of node %s inside the lease wait",
			p.Name, resp.Msg.GetWorkerId(), f.old.NodeID))
		return "; fence probe GRANTED inside the wait"
	case connect.CodeOf(err) == connect.CodeUnavailable && strings.Contains(err.Error(), "restored"):
		return fmt.Sprintf("; fence probe refused as designed (%s)", connect.CodeOf(err))
	default:
		return fmt.Sprintf("; fence probe inconclusive: %v", err)
	}
}

// checkFenced asks the resumed old allocsvr for one key of every section,
// marked as forwarded (answered only from sections it serves itself):
// every call must fail, its lease having lapsed while it was stopped.
func checkFenced(ctx context.Context, e *Env, f *fenceAim) string {
	if e.SeqSpace == "" {
		return ""
	}
	// The harness's per-key space: 1000 keys in sections of 100.
	const keys, sectionSize = 1000, 100
	var served []string
	for k := uint64(0); k < keys; k += sectionSize {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		req := connect.NewRequest(&seqsvrv1.NextSeqRequest{Space: e.SeqSpace, Key: k})
		req.Header().Set(forwardedHeader, "1")
		resp, err := e.C.SeqClient(f.old).NextSeq(cctx, req)
		cancel()
		if err == nil {
			served = append(served, fmt.Sprintf("key %d -> %d", k, resp.Msg.GetSeq()))
		}
	}
	if len(served) > 0 {
		e.Log.Error(f.fault, f.old.Name, fmt.Errorf("restore fence: %s served after its lease outlived the wait: %s",
			f.old.Name, strings.Join(served, ", ")))
		return "; the resumed old allocsvr SERVED"
	}
	return fmt.Sprintf("; %s, resumed past the wait, refused every section (self-fenced)", f.old.Name)
}

// forwardedHeader is alloc/seq's ForwardedHeader: a call carrying it is
// answered only from the sections the allocsvr serves itself.
const forwardedHeader = "Seqsvr-Forwarded"
