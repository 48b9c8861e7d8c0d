package storage

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/hashicorp/raft"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/version"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// Cluster version (guarantee 11). Every member polls the others'
// ClusterStatus for the release and feature level they run, so any
// member's ClusterStatus shows each one's version. The leader raises the
// cluster version, with a NoopCommand the base release applies as a
// no-op, only once every member in the Raft configuration (voters and
// non-voters alike: a non-voter applies the same log) has answered with
// at least that level; a member that does not answer holds the level
// where it is. Nothing here is replicated but the raise, so members of
// different releases never disagree on state.

// versionPollInterval is how often a member asks the others their version.
const versionPollInterval = 2 * time.Second

// memberVersion is what a member answered about itself.
type memberVersion struct {
	version string
	level   uint32
	hold    uint32 // its --cluster-version-hold, 0 for none
}

// versionBook holds the members' last answers, by node ID.
type versionBook struct {
	mu   sync.Mutex
	m    map[string]memberVersion
	errs map[string]string // the last poll error by node ID, "" after an answer
	held [2]uint32         // the hold and level noteHold last logged
}

func (b *versionBook) set(id string, v memberVersion) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.m == nil {
		b.m = map[string]memberVersion{}
	}
	b.m[id] = v
}

// noteErr logs when the poll of member id starts failing, or fails
// differently (with --auth-file, members poll with --join-token-file's
// token; without one every poll is refused and the cluster version stays
// where it is), and when it answers again.
func (b *versionBook) noteErr(log *slog.Logger, id string, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	b.mu.Lock()
	last := b.errs[id]
	if b.errs == nil {
		b.errs = map[string]string{}
	}
	b.errs[id] = msg
	b.mu.Unlock()
	switch {
	case msg == last:
	case msg == "":
		log.Info("member answers the version poll again", "member", id)
	default:
		log.Warn("cannot ask a member for its version; the cluster version is not raised until it answers", "member", id, "err", err)
	}
}

// noteHold logs, once per hold and level, that a hold keeps the cluster
// version below the level every member supports.
func (b *versionBook) noteHold(log *slog.Logger, by string, hold, target uint32) {
	b.mu.Lock()
	seen := b.held == [2]uint32{hold, target}
	b.held = [2]uint32{hold, target}
	b.mu.Unlock()
	if !seen {
		log.Info("cluster version held: every member supports a higher level", "hold", hold, "held_by", by, "supported", target)
	}
}

func (b *versionBook) get(id string) (memberVersion, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[id]
	return v, ok
}

// ownVersion is this member's answer: its release and fsm.Level (tests
// make a member report a lower level through levelOverride).
func (s *Store) ownVersion() memberVersion {
	l := fsm.Level
	if o := s.levelOverride.Load(); o != 0 {
		l = o
	}
	return memberVersion{version: version.String(), level: l, hold: s.cfg.ClusterVersionHold}
}

// versionLoop polls the other members and, on the leader, raises the
// cluster version when every member supports a higher level.
func (s *Store) versionLoop() {
	defer s.wg.Done()
	tick := time.NewTicker(versionPollInterval)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
		fresh := s.pollVersions()
		if s.raft.State() == raft.Leader {
			if err := s.raiseClusterVersion(s.stopCtx, fresh); err != nil {
				s.log.Warn("could not raise the cluster version; will retry", "err", err)
			}
		}
	}
}

// pollVersions asks every other member in the configuration for its
// ClusterStatus and records the release and level it reports for itself;
// it returns this round's answers alone. A member of the base release
// reports no level: it is BaseLevel.
func (s *Store) pollVersions() map[string]memberVersion {
	fresh := map[string]memberVersion{}
	cf := s.raft.GetConfiguration()
	if cf.Error() != nil {
		return fresh
	}
	for _, srv := range cf.Configuration().Servers {
		id := string(srv.ID)
		if id == s.cfg.NodeID {
			continue
		}
		addr := s.httpAddrOf(id)
		if addr == "" {
			continue
		}
		ctx, cancel := context.WithTimeout(s.stopCtx, time.Second)
		res, err := s.client(addr).ClusterStatus(ctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
		cancel()
		if err == nil && res.Msg.GetNodeId() != id {
			err = fmt.Errorf("%s answered as member %q", addr, res.Msg.GetNodeId())
		}
		s.versions.noteErr(s.log, id, err)
		if err != nil {
			// Unreachable, or another process at that address: the last
			// answer stays on display, but it does not count for a raise
			// (the member may be restarting on another binary).
			continue
		}
		v := selfReported(id, res.Msg)
		v.hold = res.Msg.GetClusterVersionHold()
		s.versions.set(id, v)
		fresh[id] = v
	}
	return fresh
}

// selfReported is what member id's own ClusterStatus says about it. A
// base-release member sends neither version nor level: it is BaseLevel.
func selfReported(id string, st *seqsvrv1.ClusterStatusResponse) memberVersion {
	v := memberVersion{level: fsm.BaseLevel}
	for _, m := range st.GetMembers() {
		if m.GetId() == id {
			v = memberVersion{version: m.GetVersion(), level: max(m.GetLevel(), fsm.BaseLevel)}
		}
	}
	return v
}

// raiseTarget is the level the cluster may be raised to: the lowest level
// any member of servers reports (self is this member, at own), or
// 0 when that is not above current or some member has not answered.
func raiseTarget(current, own uint32, servers []raft.Server, self string, levelOf func(id string) (uint32, bool)) uint32 {
	target := own
	for _, srv := range servers {
		if string(srv.ID) == self {
			continue
		}
		l, ok := levelOf(string(srv.ID))
		if !ok {
			return 0
		}
		target = min(target, l)
	}
	if target <= current {
		return 0
	}
	return target
}

// raiseClusterVersion proposes the raise when raiseTarget allows one from
// fresh, the answers of the poll just before: a raise cannot be undone,
// so an older answer (from before a member was restarted on another
// binary) never counts.
func (s *Store) raiseClusterVersion(ctx context.Context, fresh map[string]memberVersion) error {
	cf := s.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return mapRaftErr(err)
	}
	current := s.fsm.ClusterVersion()
	levelOf := func(id string) (uint32, bool) {
		v, ok := fresh[id]
		return v.level, ok
	}
	target := raiseTarget(current, s.ownVersion().level, cf.Configuration().Servers, s.cfg.NodeID, levelOf)
	if target == 0 {
		return nil
	}
	if hold, by := heldAt(s.cfg.NodeID, s.ownVersion(), fresh); hold != 0 && target > hold {
		if hold <= current {
			s.versions.noteHold(s.log, by, hold, target)
			return nil
		}
		target = hold
	}
	cmd := &seqsvrv1.Command{Cmd: &seqsvrv1.Command_Noop{Noop: &seqsvrv1.NoopCommand{ClusterVersion: target}}}
	if _, err := s.propose(ctx, cmd); err != nil {
		return err
	}
	s.log.Info("cluster version raised", "from", current, "to", target)
	return nil
}

// heldAt is the lowest --cluster-version-hold among this member (self,
// own) and the members that answered this round, and who set it; 0 when
// none holds. Any member's hold binds whichever member leads.
func heldAt(self string, own memberVersion, fresh map[string]memberVersion) (hold uint32, by string) {
	hold, by = own.hold, self
	for id, v := range fresh {
		if v.hold != 0 && (hold == 0 || v.hold < hold || v.hold == hold && id < by) {
			hold, by = v.hold, id
		}
	}
	return hold, by
}

// requireLevel refuses what needs cluster version n while the cluster is
// below it: some member may still run a binary that would apply it
// differently.
func (s *Store) requireLevel(n uint32) error {
	if v := s.fsm.ClusterVersion(); v < n {
		return fmt.Errorf("%w: this needs cluster version %d, the cluster is at %d: finish upgrading every member first",
			ErrClusterVersion, n, v)
	}
	return nil
}

// fillVersions puts each member's version and the cluster version into a
// ClusterStatus answer.
func (s *Store) fillVersions(out *seqsvrv1.ClusterStatusResponse) {
	out.ClusterVersion = s.fsm.ClusterVersion()
	out.ClusterVersionHold = s.cfg.ClusterVersionHold
	for _, m := range out.GetMembers() {
		v, ok := s.versions.get(m.GetId())
		if m.GetId() == s.cfg.NodeID {
			v, ok = s.ownVersion(), true
		}
		if ok {
			m.Version, m.Level = v.version, v.level
		}
	}
}
