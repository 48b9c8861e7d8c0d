package segment

import (
	"context"
	"errors"
	"time"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// watchDeletions asks the store about every buffered tag once per
// TagCheckInterval and drops those it no longer has. One GetTag at a time:
// the pass is a background chore and must not compete with reservations.
// A failed lookup changes nothing (the buffers keep serving while the
// store is away, guarantee 6); only not_found drops a tag.
func (a *Allocator) watchDeletions(g TagGetter) {
	defer a.wg.Done()
	tick := time.NewTicker(a.cfg.TagCheckInterval)
	defer tick.Stop()
	for {
		select {
		case <-a.ctx.Done():
			return
		case <-tick.C:
		}
		for _, t := range *a.tags.Load() {
			if a.ctx.Err() != nil {
				return
			}
			t.mu.Lock()
			skip := !t.loaded || t.removed
			t.mu.Unlock()
			if skip {
				continue // never loaded: its first reservation will tell
			}
			ctx, cancel := context.WithTimeout(a.ctx, a.cfg.LoadTimeout)
			_, err := g.GetTag(ctx, t.name)
			cancel()
			if errors.Is(err, errs.NotFound) {
				t.mu.Lock()
				a.forgetLocked(t, "the store no longer has it")
				t.mu.Unlock()
			}
		}
	}
}

// forgetLocked drops a deleted tag: it leaves the tag map, its buffers are
// emptied so that not even a request already holding them can take
// another ID, and a load in flight will file nothing. The next request
// for the name starts afresh (and gets not_found, or the new tag's IDs if
// it was created again).
func (a *Allocator) forgetLocked(t *tagState, why string) {
	if t.removed {
		return
	}
	t.removed = true
	t.gone = true
	t.cur.Load().drain()
	t.next = nil
	t.carry = nil
	t.needLoad.Store(false)
	a.dropTag(t)
	a.log.Info("tag deleted: buffers dropped", "tag", t.name, "why", why)
}
