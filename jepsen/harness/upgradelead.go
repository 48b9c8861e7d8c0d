package harness

import (
	"context"
	"path/filepath"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// upgradeAimKills bounds the leader kills that aim for a leader on the
// new binary while the versions are mixed: each lets an upgraded member
// win the election with about even odds.
const upgradeAimKills = 4

// killLeaderUntilNew SIGKILLs the leader, restarting it on the binary it
// had, until a storesvr on the new binary leads while another still runs
// the base release (at most upgradeAimKills kills). That is the one
// moment the cluster version could rise too early: a base-release leader
// knows no cluster version and never raises it, and once every member
// is upgraded a raise is due. The new leader must hold the version
// while the base members answer their level (Timeline.check fails a
// raise seen now). It records how long such a leader led, until the next
// swap, in Upgrade.NewLeaderMixed.
func (u *upgrader) killLeaderUntilNew(ctx context.Context) error {
	for i := 0; i < upgradeAimKills; i++ {
		if err := u.killLeader(ctx); err != nil {
			return err
		}
		u.out.LeaderKills++
		l, err := u.leader(ctx)
		if err != nil {
			return err
		}
		if !u.onBase(l) {
			u.newLeaderSince = u.log.Since()
			u.log.Heal(upgradeKill, l.Name, "leads on the new binary while a storesvr runs the base release")
			return nil
		}
		// The member killed last must be back before the next kill, or
		// the next one costs the quorum.
		rctx, cancel := context.WithTimeout(ctx, readyWait)
		for _, s := range u.c.Stores {
			if err := u.c.WaitReady(rctx, s); err != nil {
				cancel()
				return err
			}
		}
		cancel()
	}
	return nil
}

// onBase reports whether p runs the base release's binary.
func (u *upgrader) onBase(p *launch.Proc) bool {
	return filepath.Dir(p.Binary) == filepath.Clean(u.base)
}

// endNewLeader closes the stretch killLeaderUntilNew opened: the next
// swap may replace the leader or the last base member.
func (u *upgrader) endNewLeader() {
	if u.newLeaderSince > 0 {
		u.out.NewLeaderMixed += u.log.Since() - u.newLeaderSince
		u.newLeaderSince = 0
	}
}

// newLeaderNote is the verdict's words for NewLeaderMixed.
func newLeaderNote(d time.Duration) string {
	if d == 0 {
		return "no upgraded member led while the versions were mixed"
	}
	return "an upgraded member led while a storesvr ran the base release for " + d.Round(100*time.Millisecond).String()
}
