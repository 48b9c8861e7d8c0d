package harness

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// upgradePollEvery is how often the upgrader asks every running storesvr
// for its ClusterStatus: a raise is seen within about this of reaching a
// member's state, far sooner than a swap (stop, start, ready) takes.
const upgradePollEvery = 200 * time.Millisecond

// timelineRec collects the Timeline from the upgrader's steps and its
// poller.
type timelineRec struct {
	mu sync.Mutex
	tl Timeline
	wg sync.WaitGroup
}

// started records that p was just started (or is about to be) on its
// current binary, which the upgrader set: base or new.
func (u *upgrader) started(p *launch.Proc, why string) {
	b := BinaryStart{At: u.log.Since(), Member: p.Name, Store: p.Kind == launch.KindStore, Binary: binaryNew, Level: fsm.Level, Why: why}
	if filepath.Dir(p.Binary) == filepath.Clean(u.base) {
		b.Binary, b.Level = binaryBase, fsm.BaseLevel
	}
	u.tl.mu.Lock()
	defer u.tl.mu.Unlock()
	u.tl.tl.Binaries = append(u.tl.tl.Binaries, b)
	if b.Store {
		u.tl.tl.Hold = lowerHold(u.tl.tl.Hold, holdArg(p.Args()))
	}
}

// poll asks every running storesvr for its ClusterStatus until ctx ends.
func (u *upgrader) poll(ctx context.Context) {
	defer u.tl.wg.Done()
	for launch.Sleep(ctx, upgradePollEvery) == nil {
		for _, s := range u.c.Stores {
			if !s.Running() || s.Paused() {
				continue
			}
			at := u.log.Since()
			st, err := u.c.Status(ctx, s)
			if err != nil {
				continue
			}
			v := VersionSample{At: at, Ret: u.log.Since(), Member: s.Name, ClusterVersion: st.GetClusterVersion(),
				Hold: st.GetClusterVersionHold(), Levels: map[string]uint32{}}
			for _, m := range st.GetMembers() {
				v.Levels[m.GetId()] = m.GetLevel()
			}
			u.tl.mu.Lock()
			u.tl.tl.Versions = append(u.tl.tl.Versions, v)
			u.tl.tl.Hold = lowerHold(u.tl.tl.Hold, v.Hold)
			u.tl.mu.Unlock()
		}
	}
}

// timeline is what was recorded, once the poller has stopped.
func (u *upgrader) timeline() *Timeline {
	u.tl.wg.Wait()
	u.tl.mu.Lock()
	defer u.tl.mu.Unlock()
	tl := u.tl.tl
	tl.Binaries, tl.Versions = slices.Clone(tl.Binaries), slices.Clone(tl.Versions)
	return &tl
}

// holdArg is the --cluster-version-hold in args, 0 without one.
func holdArg(args []string) uint32 {
	const flag = "cluster-version-hold"
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		v, ok := strings.CutPrefix(a, flag+"=")
		if !ok && a == flag && i+1 < len(args) {
			v, ok = args[i+1], true
		}
		if n, err := strconv.ParseUint(v, 10, 32); ok && err == nil {
			return uint32(n)
		}
	}
	return 0
}

// lowerHold is the lower of two holds, 0 meaning none.
func lowerHold(a, b uint32) uint32 {
	if a == 0 || b != 0 && b < a {
		return b
	}
	return a
}
