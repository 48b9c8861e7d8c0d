package storage

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/routes"
)

// raftCurrentTermKey is where hashicorp/raft keeps the current term in the
// stable store (its keyCurrentTerm).
var raftCurrentTermKey = []byte("CurrentTerm")

// forgotten reports whether the data dir holds no Raft term: raft-boltdb
// keeps the log and the stable store (term and vote) in one file, so a
// lost raft.db is both, and whatever this member acknowledged before (if
// anything) it no longer knows, even where snapshots survived
// (raft.HasExistingState counts a snapshot alone as state). A log
// compacted into a snapshot, or a data dir a restore or recovery wrote,
// keeps its term.
func forgotten(stable raft.StableStore) (bool, error) {
	term, err := stable.GetUint64(raftCurrentTermKey)
	if err != nil && err.Error() != "not found" {
		return false, fmt.Errorf("storage: read the raft term: %w", err)
	}
	return term == 0, nil
}

// startPlan is what a member without Raft state learned from its peers.
type startPlan struct {
	// bootstrap: no cluster exists yet; write the configuration of Peers.
	bootstrap bool
	// gate: the leader re-admitted this member (as a non-voter) at this
	// commit index; it withholds its vote until it has reached it.
	gate uint64
}

// probeTarget is one member a starting member asks.
type probeTarget struct{ id, httpAddr string }

// discover decides, before Raft runs, what a member without Raft state
// does: it asks every listed member (Peers, or the Join address) with
// MemberProbe, answering the same probe itself meanwhile.
//   - A member reports a cluster: this member asks the leader to take it
//     back (AddMember with replace: a stale entry of its ID is removed
//     first, then it is added as a non-voter), then runs Raft with its
//     vote withheld until it has caught up (voteGate).
//   - With Peers, every other listed member has been seen in this start
//     without a cluster: it bootstraps Peers, as they do.
//   - Otherwise (members unreachable, or the Join target has no cluster
//     yet) it waits, saying why in its log, in MemberProbe and on /readyz,
//     until ctx ends. It never guesses.
func (s *Store) discover(ctx context.Context) (startPlan, error) {
	if s.cfg.Join == "" && plantedBlindBootstrap() {
		return startPlan{bootstrap: true}, nil
	}
	var targets []probeTarget
	if s.cfg.Join != "" {
		targets = append(targets, probeTarget{httpAddr: s.cfg.Join})
	}
	for _, p := range s.cfg.Peers {
		if p.ID != s.cfg.NodeID {
			targets = append(targets, probeTarget{id: p.ID, httpAddr: p.HTTPAddr})
		}
	}
	var why atomic.Pointer[string]
	setWhy := func(w string) { why.Store(&w) }
	setWhy("asking the listed members whether a cluster exists")
	if s.cfg.ServeWhileWaiting != nil {
		w := &waitingService{id: s.cfg.NodeID, why: func() string { return *why.Load() }}
		s.cfg.ServeWhileWaiting(w.routes(), w.ready)
	}
	s.log.Info("no raft state in the data dir: asking the listed members whether a cluster exists before starting raft",
		"data_dir", s.cfg.DataDir, "members", len(targets))
	seen := map[string]bool{} // listed members seen without a cluster in this start
	var lastWhy, w string
	var lastLog time.Time
	var plan startPlan
	var foundID string // the cluster whose leader refused or failed to take this member back
	// Stop ends the wait as the caller's context does.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	// One round of probes is one attempt: a cluster's leader refusing
	// this member (errs.Judge's definite answers, such as a live process
	// holding this ID) ends the wait; any other outcome waits and asks
	// again, the rounds spaced by DiscoverBackoff.
	p := errs.Policy{Caller: errs.StoreCall, Backoff: s.cfg.DiscoverBackoff}
	err := errs.Retry(ctx, p, func(ctx context.Context, _ int) error {
		answers := s.probeAll(ctx, targets)
		var found *seqsvrv1.MemberProbeResponse
		var foundAt string
		var unreachable, noCluster []string
		for i, t := range targets {
			a := answers[i]
			switch {
			case a.err != nil:
				unreachable = append(unreachable, fmt.Sprintf("%s (%v)", t.label(), a.err))
			case a.res.GetClusterExists():
				if found == nil || found.GetLeaderHttpAddr() == "" {
					found, foundAt = a.res, t.httpAddr
				}
			default:
				seen[t.httpAddr] = true
				noCluster = append(noCluster, t.label())
			}
		}
		var wait error // the answer that keeps this member waiting
		switch {
		case found != nil:
			var err error
			if plan, err = s.rejoin(ctx, found, foundAt); err == nil {
				return nil
			}
			foundID = found.GetClusterId()
			w = fmt.Sprintf("cluster %s exists (seen at %s); waiting for its leader to take this member back: %v", foundID, foundAt, err)
			wait = fmt.Errorf("rejoin through %s: %w", foundAt, err)
		case s.cfg.Join == "" && len(seen) == len(targets):
			s.log.Info("every listed member was seen without a cluster: bootstrapping", "members", len(s.cfg.Peers))
			plan = startPlan{bootstrap: true}
			return nil
		case s.cfg.Join != "" && len(unreachable) == 0:
			w = fmt.Sprintf("the member at --join %s has no cluster yet", s.cfg.Join)
		default:
			var unseen []string
			for _, t := range targets {
				if !seen[t.httpAddr] {
					unseen = append(unseen, t.label())
				}
			}
			w = fmt.Sprintf("no cluster found and not every listed member seen yet; waiting for %s", strings.Join(unseen, ", "))
			if len(unreachable) > 0 {
				w += "; unreachable: " + strings.Join(unreachable, "; ")
			}
		}
		setWhy(w)
		if w != lastWhy || time.Since(lastLog) > 30*time.Second {
			s.log.Warn("raft not started: "+w, "seen_without_cluster", noCluster)
			lastWhy, lastLog = w, time.Now()
		}
		if wait == nil {
			wait = fmt.Errorf("%w: %s", errs.Unavailable, w)
		}
		return wait
	})
	var st *errs.Stopped
	switch {
	case err == nil:
		return plan, nil
	case errors.As(err, &st) && st.Ctx != nil:
		return startPlan{}, fmt.Errorf("%w: stopped while waiting: %s", errs.Unavailable, w)
	}
	// A definite refusal: a live process holds this ID, or the cluster
	// refuses this member. Asking again cannot help.
	s.log.Error("taking this member back was refused; exiting", "err", err)
	return startPlan{}, fmt.Errorf("storage: rejoin cluster %s: %w", foundID, err)
}

func (t probeTarget) label() string {
	if t.id == "" {
		return t.httpAddr
	}
	return t.id + "@" + t.httpAddr
}

type probeAnswer struct {
	res *seqsvrv1.MemberProbeResponse
	err error
}

// probeAll asks every target at once, each within a second.
func (s *Store) probeAll(ctx context.Context, targets []probeTarget) []probeAnswer {
	out := make([]probeAnswer, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			res, err := s.client(t.httpAddr).MemberProbe(pctx, connect.NewRequest(&seqsvrv1.MemberProbeRequest{FromId: s.cfg.NodeID}))
			if err != nil {
				out[i].err = err
				return
			}
			out[i].res = res.Msg
		}()
	}
	wg.Wait()
	return out
}

// rejoin asks the cluster that found reported to take this member back:
// through its leader where known (a follower forwards it).
func (s *Store) rejoin(ctx context.Context, found *seqsvrv1.MemberProbeResponse, at string) (startPlan, error) {
	via := found.GetLeaderHttpAddr()
	if via == "" {
		via = at
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := s.client(via).AddMember(actx, connect.NewRequest(&seqsvrv1.AddMemberRequest{
		Id: s.cfg.NodeID, RaftAddr: s.cfg.RaftAddr, HttpAddr: s.cfg.HTTPAddr, Replace: true}))
	if err != nil {
		return startPlan{}, err
	}
	gate := max(res.Msg.GetCommitIndex(), 1)
	suffrage := "absent"
	for _, m := range res.Msg.GetMembers() {
		if m.GetId() == s.cfg.NodeID {
			suffrage = m.GetSuffrage()
		}
	}
	s.log.Info("re-admitted by the cluster: starting raft with this member's vote withheld until it has caught up",
		"cluster_id", res.Msg.GetClusterId(), "leader", res.Msg.GetLeaderId(), "through", via, "suffrage", suffrage, "gate_index", gate)
	return startPlan{gate: gate}, nil
}

// waitingService answers MemberProbe for a member that has not started
// Raft yet.
type waitingService struct {
	seqsvrv1connect.UnimplementedStoreServiceHandler
	id  string
	why func() string
}

func (w *waitingService) routes() routes.Table {
	return routes.Table{Partial: true, Procedures: []routes.Procedure{
		routes.Unary(seqsvrv1connect.StoreServiceMemberProbeProcedure, memberProbeRole, w.MemberProbe),
	}}
}

func (w *waitingService) MemberProbe(context.Context, *connect.Request[seqsvrv1.MemberProbeRequest]) (*connect.Response[seqsvrv1.MemberProbeResponse], error) {
	return connect.NewResponse(&seqsvrv1.MemberProbeResponse{NodeId: w.id, Phase: phaseWaiting, WaitingFor: w.why()}), nil
}

func (w *waitingService) ready(context.Context) error {
	return fmt.Errorf("%w: raft not started: %s", errs.Unavailable, w.why())
}
