package nemesis

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/jepsen/history"
)

// Env is what faults act on.
type Env struct {
	C   *launch.Cluster
	Log *Log
	// Net partitions the network; nil when not available (not root, no
	// ip netns), and the partition faults then skip.
	Net *Net
	// ElectionTimeout sizes the pauses ("several election timeouts").
	ElectionTimeout time.Duration
	// LeaseTTL is the snowflake worker lease TTL the stores were given.
	LeaseTTL time.Duration
	// SnowflakeFenceMargin and SnowflakeMaxClockOffset are the allocsvrs'
	// --snowflake-fence-margin and --snowflake-max-clock-offset: the
	// margins the aimed snowflake faults are sized by (margin.go).
	SnowflakeFenceMargin, SnowflakeMaxClockOffset time.Duration
	// SeqLeaseTTL is the per-key sequence lease the stores were given
	// (--seq-lease-ttl): how long a dead allocsvr keeps its sections.
	SeqLeaseTTL time.Duration
	// SeqSpace is the per-key workload's space (seq-add-alloc-aimed
	// watches its routing table).
	SeqSpace string
	// AfterResume runs right after a paused store is resumed, so the
	// workload can aim reads at a member that may believe stale things.
	AfterResume func(p *launch.Proc)
	// OperatorTags are the tags the operator fault deletes and re-creates:
	// tags the allocsvrs serve to the clients.
	OperatorTags []string
	// AddAlloc and RemoveAlloc tell the workload about extra allocsvrs
	// (the twin of the takeover fault).
	AddAlloc, RemoveAlloc func(p *launch.Proc)
	// Reserve makes (and records) one reservation with a fresh
	// request_id through p; Resend re-sends an earlier one's request_id
	// through p and records it as history.Resend, marked with across.
	Reserve func(ctx context.Context, p *launch.Proc) *history.Op
	Resend  func(ctx context.Context, p *launch.Proc, orig *history.Op, across string) *history.Op
	// Snowflake makes (and records) one NextSnowflakeIDs call of one ID
	// through p: the aimed faults probe both holders of a worker ID with
	// it at the moment their margin is at stake (probe.go).
	Snowflake func(ctx context.Context, p *launch.Proc) *history.Op
	// LastSnowflakeMs is the timestamp (unix ms) of the largest snowflake
	// ID p returned in its latest lifetime, from the history.
	LastSnowflakeMs func(p *launch.Proc) (int64, bool)
	// BackupDir receives the backups the backup fault takes (disaster.go);
	// empty: the disaster faults skip.
	BackupDir string
	backups   shelf
	// skewedRuns counts skewed-takeover's runs (under twinMu): its side
	// of the clock tolerance alternates.
	skewedRuns int

	// One membership change at a time, one twin at a time (a twin has a
	// fixed port in namespaces) and one extra allocsvr at a time (it has
	// one name); they may overlap.
	memberMu, twinMu, extraMu sync.Mutex
	// wipes counts the lost-disk fault's wipes per store (under
	// memberMu), so each run of it picks a member wiped least often.
	wipes map[string]int
}

// Fault is one kind of injection. Run injects it, holds it, heals it and
// returns; it must leave every original process running and unpaused.
type Fault struct {
	Name string
	// Kind groups faults into lanes that may run concurrently.
	Lane string // "store" or "alloc"
	Run  func(ctx context.Context, e *Env, r *rand.Rand) error
	// Rest is an extra pause of Rest..2*Rest its lane takes before each
	// run of it: what it targets lives that long first (kill-alloc-slow).
	Rest time.Duration
}

func hold(ctx context.Context, r *rand.Rand, lo, hi time.Duration) time.Duration {
	d := lo
	if hi > lo {
		d += time.Duration(r.Int63n(int64(hi - lo)))
	}
	sleep(ctx, d)
	return d
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) { _ = launch.Sleep(ctx, d) }

// skipped logs fault name as skipped, and reports true, when its target
// could not be found (err).
func (e *Env) skipped(name string, err error) bool {
	if err != nil {
		e.Log.Skip(name, "%v", err)
		return true
	}
	return false
}

func (e *Env) leader(ctx context.Context) (*launch.Proc, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return e.C.Leader(ctx)
}

func (e *Env) follower(ctx context.Context, r *rand.Rand) (*launch.Proc, *launch.Proc, error) {
	l, err := e.leader(ctx)
	if err != nil {
		return nil, nil, err
	}
	var fs []*launch.Proc
	for _, s := range e.C.Stores {
		if s != l && s.Running() {
			fs = append(fs, s)
		}
	}
	if len(fs) == 0 {
		return nil, l, fmt.Errorf("no running follower")
	}
	return fs[r.Intn(len(fs))], l, nil
}

// SetClock sets an allocsvr's (or store's) injected clock offset through
// the faults build's admin endpoint.
func (e *Env) SetClock(ctx context.Context, p *launch.Proc, offset time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	url := fmt.Sprintf("%s/debug/faults/clock?offset_ms=%d", p.URL(), offset.Milliseconds())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	resp, err := e.C.HTTPClient().Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s (is the binary built with -tags faults?)", url, resp.Status)
	}
	return nil
}

// removeRetry and removeBudget are how removeMember repeats its call: as
// a store caller, for at most removeBudget before the configuration
// decides.
var removeRetry = errs.Policy{Caller: errs.StoreCall, Backoff: errs.Backoff{Min: 200 * time.Millisecond, Max: time.Second}}

const removeBudget = 15 * time.Second

// removeMember removes m from the configuration and settles an ambiguous
// answer. "unavailable: leadership lost ... may have committed" can mean the
// member is already gone; treating that as "not removed" once left a member
// out of the cluster for good while the harness still counted it. Removing
// an absent member succeeds, so retrying turns any ambiguity into a definite
// answer; if the retries run out, the configuration itself decides.
func (e *Env) removeMember(ctx context.Context, via, m *launch.Proc) error {
	req := &seqsvrv1.RemoveMemberRequest{Id: m.NodeID, RaftAddr: m.RaftAddr, HttpAddr: m.HTTPAddr}
	rctx, cancel := context.WithTimeout(ctx, removeBudget)
	defer cancel()
	err := errs.Retry(rctx, removeRetry, func(context.Context, int) error {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, err := e.C.StoreClient(via).RemoveMember(cctx, connect.NewRequest(req))
		return err
	})
	if err == nil {
		return nil
	}
	var st *errs.Stopped
	if !errors.As(err, &st) {
		return err
	}
	if st.Verdict.Retry {
		// Ambiguous to the end (the run may be over, or no leader
		// yet): the change may still commit once a leader is
		// elected, so wait for one to say, on a context of its
		// own. Counting a removed member as a member fails the
		// final check on its stale state.
		if member, known := e.settleMember(m, 30*time.Second); known && !member {
			return nil
		}
	} else if member, known := e.isMember(ctx, m); known && !member {
		return nil
	}
	return st.Last
}

// settleMember polls isMember until a leader answers or d passes.
func (e *Env) settleMember(m *launch.Proc, d time.Duration) (member, known bool) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		if member, known = e.isMember(ctx, m); known || ctx.Err() != nil {
			return member, known
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// isMember asks the current leader (never m) whether m is in the Raft
// configuration: a lagging follower may not have seen the latest change yet.
// known is false when no leader answered.
func (e *Env) isMember(ctx context.Context, m *launch.Proc) (member, known bool) {
	for _, p := range e.C.Stores {
		if p == m || !p.Running() {
			continue
		}
		st, err := e.C.Status(ctx, p)
		if err != nil || st.GetLeaderId() != st.GetNodeId() {
			continue
		}
		for _, mb := range st.GetMembers() {
			if mb.GetId() == m.NodeID {
				return true, true
			}
		}
		return false, true
	}
	return false, false
}

func (e *Env) waitReady(ctx context.Context, p *launch.Proc, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return e.C.WaitReady(ctx, p)
}
