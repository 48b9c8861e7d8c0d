package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

// The upgrade scenario: the cluster starts on the base
// release's binaries (BaseRelease, BuildBase) under the full load, and
// the upgrader replaces one process at a time with the current build, the
// way docs/upgrading.md tells an operator to:
//
//  1. each storesvr in turn, followers first and the leader last
//     (SIGTERM, swap the binary, start on the same data dir, wait for
//     /readyz); after the first one the leader is SIGKILLed once, while
//     the versions are mixed, and restarted on its old binary;
//  2. once the cluster version reached the new level, each allocsvr the
//     same way;
//  3. then one allocsvr, and then one follower storesvr, are rolled back
//     to the base binary on their data dirs (the documented order). Each must serve, or refuse
//     with an error; it must not crash and must not serve wrong state: it
//     stays on the base binary to the end, so the final state read from
//     every member and every checker cover it.
//
// The steps are Duration/upgradeSlots apart, so with the
// full matrix's 100 s the versions are mixed for about 50 s, the
// storesvrs alone for about 35 s.

// Fault names in the nemesis log (and the report's fault lines).
const (
	upgradeStore  = "upgrade-store"
	upgradeAlloc  = "upgrade-alloc"
	upgradeKill   = "kill-leader"
	rollbackStore = "rollback-store"
	rollbackAlloc = "rollback-alloc"
	// clusterVersionStep logs the wait for the cluster version (no fault).
	clusterVersionStep = "cluster-version"
)

// readyWait bounds the wait for a swapped or rolled-back process to be
// ready (an allocsvr rolled back to a release that cannot read its data
// dir's instance waits out its old lease first: --worker-lease-ttl).
const readyWait = 60 * time.Second

// upgradeOverrun is how far past its Duration an upgrade run may go to
// finish its steps (Run): on a loaded 2-core machine the readiness waits
// of eight process starts added up to more than the smoke's 40 s.
const upgradeOverrun = 90 * time.Second

// upgradeSlots divides the run: 3 store swaps, the leader kill, 2 alloc
// swaps and 2 rollbacks take one slot each and the stores stay mixed one
// more; the rest is load before the first step and after the rollbacks.
const upgradeSlots = 13

// upgradeScenario is `upgrade` of the full matrix: the per-key workload
// too, and snapshots often, so that members restart, and the rolled-back
// one starts, from snapshots the other version wrote.
func upgradeScenario() Config {
	return Config{Name: "upgrade", Upgrade: true, SeqWorkers: 3, StoreArgs: snapshotOften}
}

// upgradeMinDuration fits every step of the scenario: each waits for a
// process to be ready (about a second here) besides its slot.
const upgradeMinDuration = 40 * time.Second

// UpgradeSmoke is the short upgrade run of `make test`.
func UpgradeSmoke(d time.Duration) Config {
	c := upgradeScenario()
	c.Name, c.Duration = "upgrade-smoke", d
	return c
}

// upgrader runs the steps on the cluster; cur and base are the bin dirs.
type upgrader struct {
	c         *launch.Cluster
	log       *nemesis.Log
	cur, base string
	gap       time.Duration
	out       Upgrade
	rolled    []rolled
	tl        timelineRec
	// sec is the cluster's secure mode (nil: plain); args, each
	// process's flags as created (setBinary).
	sec  *launch.Security
	args map[*launch.Proc][]string
	// newLeaderSince is when an upgraded member came to lead while the
	// versions were mixed (killLeaderUntilNew), 0 outside that stretch.
	newLeaderSince time.Duration
}

// rolled is a member on the base binary again, since at on the run clock.
type rolled struct {
	p  *launch.Proc
	at time.Duration
}

// newUpgrader points every process of c at the base binaries (in base);
// c is not launched yet. cur holds the current build.
func newUpgrader(c *launch.Cluster, sec *launch.Security, log *nemesis.Log, cur, base string, b Base, d time.Duration) (*upgrader, error) {
	cur, err := filepath.Abs(cur)
	if err != nil {
		return nil, err
	}
	name := b.Commit[:min(len(b.Commit), 12)]
	if b.Version != "" {
		name += " (" + b.Version + ")"
	}
	u := &upgrader{c: c, sec: sec, log: log, cur: cur, base: base, gap: d / upgradeSlots,
		out: Upgrade{Base: name, Stores: len(c.Stores), Allocs: len(c.Allocs)}}
	for _, p := range c.All() {
		u.setBinary(p, base)
		u.started(p, "launch") // the caller launches the cluster next
	}
	return u, nil
}

// run does the steps until they are done or ctx ends (the run is over:
// what was not done shows in the verdict).
func (u *upgrader) run(ctx context.Context) {
	u.tl.wg.Add(1)
	go u.poll(ctx)
	if err := u.steps(ctx); err != nil && ctx.Err() == nil {
		u.out.Err = err.Error()
		u.log.Error("upgrade", "", err)
	}
}

func (u *upgrader) steps(ctx context.Context) error {
	var mixedFrom time.Duration
	wait := u.gap
	for u.out.StoresDone < len(u.c.Stores) {
		if err := launch.Sleep(ctx, wait); err != nil {
			return err
		}
		wait = u.gap
		p, err := u.nextStore(ctx)
		if err != nil {
			return err
		}
		u.endNewLeader()
		if u.out.StoresDone == 0 {
			mixedFrom = u.log.Since()
		}
		if err := u.swap(p, u.cur, upgradeStore); err != nil {
			return err
		}
		u.out.StoresDone++
		if u.out.LeaderKills == 0 && u.out.StoresDone < len(u.c.Stores) {
			if err := launch.Sleep(ctx, u.gap); err != nil {
				return err
			}
			if err := u.killLeaderUntilNew(ctx); err != nil {
				return err
			}
			// Two slots before the next swap: the stores' versions stay
			// mixed for four (30 s of the full matrix's 100 s).
			wait = 2 * u.gap
		}
	}
	u.out.StoresMixed = u.log.Since() - mixedFrom
	// docs/upgrading.md: the cluster version reaches the new level before
	// the allocsvrs are replaced.
	u.out.ClusterVersion, u.out.ClusterVersionStuck = u.waitClusterVersion(ctx)
	u.log.Heal(clusterVersionStep, "stores", "%s", u.out.ClusterVersion)
	for _, a := range u.c.Allocs {
		if err := launch.Sleep(ctx, u.gap); err != nil {
			return err
		}
		if err := u.swap(a, u.cur, upgradeAlloc); err != nil {
			return err
		}
		u.out.AllocsDone++
	}
	u.out.Mixed = u.log.Since() - mixedFrom
	// Rollbacks in the documented order, the upgrade's reversed: an
	// allocsvr, then a storesvr (a follower).
	if err := launch.Sleep(ctx, u.gap); err != nil {
		return err
	}
	if err := u.rollback(u.c.Allocs[0], rollbackAlloc); err != nil {
		return err
	}
	if err := launch.Sleep(ctx, u.gap); err != nil {
		return err
	}
	l, err := u.leader(ctx)
	if err != nil {
		return err
	}
	for _, s := range u.c.Stores {
		if s != l {
			return u.rollback(s, rollbackStore)
		}
	}
	return fmt.Errorf("rollback: no follower")
}

func (u *upgrader) leader(ctx context.Context) (*launch.Proc, error) {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return u.c.Leader(lctx)
}

// nextStore is a store still on the base binary: a follower while there
// is one, the leader last.
func (u *upgrader) nextStore(ctx context.Context) (*launch.Proc, error) {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l, err := u.c.Leader(lctx)
	if err != nil {
		return nil, err
	}
	var leaderOld bool
	for _, s := range u.c.Stores {
		if s.Binary == filepath.Join(u.cur, string(s.Kind)) {
			continue
		}
		if s != l {
			return s, nil
		}
		leaderOld = true
	}
	if leaderOld {
		return l, nil
	}
	return nil, fmt.Errorf("no storesvr left on the base binary")
}

// swap stops p with SIGTERM, points it at binDir's binary and starts it
// on the same data dir, then waits for /readyz.
func (u *upgrader) swap(p *launch.Proc, binDir, fault string) error {
	since := u.log.Since()
	u.log.Inject(fault, p.Name, "SIGTERM, start on %s", binDir)
	if err := p.Stop(); err != nil {
		return err
	}
	u.setBinary(p, binDir)
	u.started(p, fault)
	if err := p.Start(context.Background()); err != nil {
		return err
	}
	// A step once begun is waited for on its own clock, not the run's:
	// its result is judged, not cut off by the end of the load.
	rctx, cancel := context.WithTimeout(context.Background(), readyWait)
	defer cancel()
	if err := u.c.WaitReady(rctx, p); err != nil {
		u.log.Error(fault, p.Name, err)
		return err
	}
	u.log.Heal(fault, p.Name, "ready on %s", binDir)
	u.log.Window(fault, since)
	return nil
}

// killLeader SIGKILLs the leader while the versions are mixed and starts
// it again on the binary it had.
func (u *upgrader) killLeader(ctx context.Context) error {
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l, err := u.c.Leader(lctx)
	if err != nil {
		return err
	}
	since := u.log.Since()
	if err := l.Kill(); err != nil {
		return err
	}
	u.log.Inject(upgradeKill, l.Name, "SIGKILL (versions mixed; it runs %s)", filepath.Dir(l.Binary))
	_ = launch.Sleep(ctx, 2*ElectionTimeout)
	u.started(l, upgradeKill)
	if err := l.Start(context.Background()); err != nil {
		return err
	}
	u.log.Heal(upgradeKill, l.Name, "restarted")
	u.log.Window(upgradeKill, since)
	return nil
}

// rollback puts p back on the base binary and watches it start: ready,
// or an exit whose log says why. It stays there to the end.
func (u *upgrader) rollback(p *launch.Proc, fault string) error {
	u.rolled = append(u.rolled, rolled{p, u.log.Since()})
	u.log.Inject(fault, p.Name, "SIGTERM, start on the base release %s", u.base)
	if err := p.Stop(); err != nil {
		return err
	}
	u.setBinary(p, u.base)
	u.started(p, fault)
	if err := p.Start(context.Background()); err != nil {
		return err
	}
	rctx, rcancel := context.WithTimeout(context.Background(), readyWait) // as in swap
	defer rcancel()
	rb := Rollback{Member: p.Name, Result: "served"}
	if err := u.c.WaitReady(rctx, p); err != nil {
		rb.Result = "not ready"
		if !p.Running() {
			rb.Result = exitKind(p)
		}
		rb.Log = lastLines(p.LogPath, 6)
		u.log.Error(fault, p.Name, fmt.Errorf("%s: %s", rb.Result, strings.Join(rb.Log, " | ")))
	} else {
		u.log.Heal(fault, p.Name, "ready on the base release; stays on it to the end")
	}
	u.out.Rollbacks = append(u.out.Rollbacks, rb)
	return nil
}

// finish runs after the load stopped, before the final reads: a
// rolled-back member that exited since it became ready is judged on its
// log, and one that is down goes back on the current binary so the final
// state can be read from every member. The load has stopped, and with
// it the poll of the cluster version: the timeline is complete.
func (u *upgrader) finish() {
	u.out.Timeline = u.timeline()
	for i, r := range u.rolled {
		u.log.Window(faultOf(r.p), r.at) // to now, the end of the load
		if r.p.Running() {
			continue
		}
		if i < len(u.out.Rollbacks) && u.out.Rollbacks[i].Result == "served" {
			rb := &u.out.Rollbacks[i]
			rb.Result, rb.Log = exitKind(r.p), lastLines(r.p.LogPath, 6)
			u.log.Error(faultOf(r.p), r.p.Name, fmt.Errorf("exited on the base release: %s", strings.Join(rb.Log, " | ")))
		}
		u.setBinary(r.p, u.cur)
		u.log.Heal(faultOf(r.p), r.p.Name, "back on the current binary for the final reads")
	}
}

func faultOf(p *launch.Proc) string {
	if p.Kind == launch.KindStore {
		return rollbackStore
	}
	return rollbackAlloc
}
