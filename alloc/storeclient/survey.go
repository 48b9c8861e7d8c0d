package storeclient

import (
	"context"
	"fmt"
	"slices"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
)

// surveyGrace is how long a leader lookup still waits for the other
// members once one of them named a leader of a cluster it may follow: a
// member of a newer cluster that answers a little later still wins, and a
// paused member costs this much, not a whole RequestTimeout.
const surveyGrace = 100 * time.Millisecond

// errFenced: every member that answered belongs to a cluster the client
// refuses (or names no leader); the call is retried until the deadline.
var errFenced = errs.New(errs.Unavailable, "no store member of the followed cluster answers")

type statusAnswer struct {
	url string
	cs  *seqsvrv1.ClusterStatusResponse
}

func identityOf(cs *seqsvrv1.ClusterStatusResponse) Identity {
	return Identity{Generation: cs.GetGeneration(), ClusterID: cs.GetClusterId()}
}

// Survey asks every store member at once for its ClusterStatus, waits for
// all of them (up to Options.RequestTimeout), follows the highest cluster
// it may follow, and answers that cluster's status as its leader or the
// most recent member reports it. The allocsvr calls it periodically, so a
// cluster restored on other addresses is found while the old leader still
// answers, and members of a cluster it refuses are reported
// (FencedStores).
func (c *Client) Survey(ctx context.Context) (*seqsvrv1.ClusterStatusResponse, error) {
	best, err := c.survey(ctx, true)
	if err != nil {
		return nil, err
	}
	return best.cs, nil
}

// survey asks every member, and with all false stops surveyGrace after the
// first answer it may follow that names a leader. It returns the answer
// chosen: the highest cluster the client may follow, preferring an answer
// that names a leader, then the highest term.
func (c *Client) survey(ctx context.Context, all bool) (statusAnswer, error) {
	sctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	ch := make(chan statusAnswer, len(c.urls))
	for _, u := range c.urls {
		go func(u string) {
			res, err := c.client(u).ClusterStatus(sctx, connect.NewRequest(&seqsvrv1.ClusterStatusRequest{}))
			a := statusAnswer{url: u}
			if err == nil {
				a.cs = res.Msg
			}
			ch <- a
		}(u.String())
	}
	ours := c.Followed()
	var got []statusAnswer
	var grace <-chan time.Time
wait:
	for range c.urls {
		select {
		case a := <-ch:
			got = append(got, a)
			if !all && grace == nil && a.cs != nil && a.cs.GetLeaderHttpAddr() != "" {
				if v := judge(ours, identityOf(a.cs)); v == usable || v == newer {
					grace = time.After(surveyGrace)
				}
			}
		case <-grace:
			break wait
		case <-sctx.Done():
			break wait
		}
	}
	if all {
		c.noteSilent(got)
	}
	return c.settle(got)
}

// forgetFencedAfter is how many whole surveys in a row a fenced member
// must leave unanswered before it is no longer listed as fenced (about
// 6 s at the allocsvr's 2 s survey): an old member stopped for good, as
// the runbook says, then stops counting, and its alert resolves. Nothing
// is weakened: every answer is judged again, so the member, back as the
// cluster it was, is fenced again at its first answer.
const forgetFencedAfter = 3

// noteSilent counts, per member, the whole surveys in a row it did not
// answer (got holds the answers), and forgets the fence of a member
// silent for forgetFencedAfter of them, unless it refused a write within
// refusalHold.
func (c *Client) noteSilent(got []statusAnswer) {
	answered := map[string]bool{}
	for _, a := range got {
		if a.cs != nil {
			answered[a.url] = true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range c.urls {
		u := u.String()
		if answered[u] {
			delete(c.silent, u)
			continue
		}
		c.silent[u]++
		if id, ok := c.fenced[u]; ok && c.silent[u] >= forgetFencedAfter && !c.heldRefusal(u) {
			delete(c.fenced, u)
			c.log.Info("a fenced store member no longer answers: no longer listed as fenced (it is fenced again if it answers as that cluster)",
				"url", u, "its_cluster_id", id.ClusterID, "its_generation", id.Generation, "surveys", c.silent[u])
		}
	}
}

// settle follows the best of the answers, learns its leader, and then
// records, judged against the cluster followed now, which members are
// refused and which may take a call while no leader is known.
func (c *Client) settle(got []statusAnswer) (statusAnswer, error) {
	ours := c.Followed()
	var best, anon *statusAnswer
	var bestID Identity
	for i := range got {
		a := &got[i]
		if a.cs == nil {
			continue
		}
		id := identityOf(a.cs)
		switch judge(ours, id) {
		case fenced:
			continue
		case anonymous:
			if anon == nil || better(a, anon) {
				anon = a
			}
			continue
		}
		if id.ClusterID == ours.ClusterID {
			id.Generation = max(id.Generation, ours.Generation)
		}
		if best == nil || id.above(bestID) || id == bestID && better(a, best) {
			best, bestID = a, id
		}
	}
	if best == nil {
		best = anon
	}
	var err error
	if best != nil {
		_, err = c.learn(best.url, best.cs)
	}
	now := c.Followed()
	seen, refused := map[string]bool{}, map[string]Identity{}
	for _, a := range got {
		if a.cs == nil {
			continue
		}
		id := identityOf(a.cs)
		v := judge(now, id)
		seen[a.url] = v == usable
		if v == fenced {
			refused[a.url] = id
		}
	}
	c.noteAnswers(seen, refused)
	switch {
	case err != nil:
		return statusAnswer{}, err
	case best != nil:
		return *best, nil
	case len(refused) > 0:
		return statusAnswer{}, fmt.Errorf("%w: %d member(s) answer as another cluster of a generation not above %s", errFenced, len(refused), now)
	}
	return statusAnswer{}, fmt.Errorf("%w: no member answered", errFenced)
}

// better prefers an answer naming a leader, then the higher term.
func better(a, b *statusAnswer) bool {
	al, bl := a.cs.GetLeaderHttpAddr() != "", b.cs.GetLeaderHttpAddr() != ""
	if al != bl {
		return al
	}
	return a.cs.GetTerm() > b.cs.GetTerm()
}

// learn takes a member's ClusterStatus answer: a cluster the client
// refuses is recorded and refused (errFenced, so the call is retried on
// another member); a newer one is followed from now on (follow); then the
// leader it names is learned.
func (c *Client) learn(from string, cs *seqsvrv1.ClusterStatusResponse) (string, error) {
	id := identityOf(cs)
	ours := c.Followed()
	switch judge(ours, id) {
	case fenced:
		c.noteAnswers(map[string]bool{from: false}, map[string]Identity{from: id})
		return "", fmt.Errorf("%w: %s answers as %s, not above the followed %s", errFenced, from, id, ours)
	case usable, newer:
		if id.Known() && (!ours.Known() || id.ClusterID != ours.ClusterID) {
			c.follow(ours, id)
		}
	}
	return c.learnLeader(from, cs), nil
}

// Followed is the cluster the client follows (the zero Identity before
// any member named one, unless Options.DataDir remembered one).
func (c *Client) Followed() Identity {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.followed
}

// follow moves the client from was to now, a cluster it may follow: it is
// remembered in the data dir first, then the change hooks run (the first
// cluster learned by a process without a remembered one is no change).
func (c *Client) follow(was, now Identity) {
	c.followMu.Lock()
	defer c.followMu.Unlock()
	c.mu.Lock()
	cur := c.followed
	c.mu.Unlock()
	if cur != was {
		return // another caller moved first; its answer is judged again next time
	}
	if err := saveFollowed(c.opts.DataDir, now); err != nil {
		// Followed anyway: the fence holds while this process runs.
		c.log.Error("cannot remember the followed store cluster: after a restart, an old one may be followed again", "cluster", now, "err", err)
	}
	c.mu.Lock()
	c.followed = now
	if was.Known() && was.ClusterID != now.ClusterID {
		// A leader learned from the old cluster is not this cluster's.
		c.leader = ""
	}
	hooks := slices.Clone(c.onChange)
	c.mu.Unlock()
	if !was.Known() {
		c.log.Info("following the store cluster", "cluster_id", now.ClusterID, "generation", now.Generation)
		return
	}
	c.log.Warn("the store's cluster ID changed: it was restored or recovered; taking over as a new member",
		"was", was.ClusterID, "was_generation", was.Generation, "now", now.ClusterID, "generation", now.Generation)
	// Off the caller's goroutine: a hook takes its component's locks,
	// and this call may come from code holding them.
	go func() {
		c.hookMu.Lock()
		defer c.hookMu.Unlock()
		for _, f := range hooks {
			f(was.ClusterID, now.ClusterID)
		}
	}()
}

// noteAnswers records what the members that answered (the keys of seen)
// are now: refused (logged when newly so, each answer counted), or, where
// seen is true, members of the followed cluster, which may take a call
// while no leader is known.
func (c *Client) noteAnswers(seen map[string]bool, refused map[string]Identity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ours := c.followed
	for u, ok := range seen {
		if _, bad := refused[u]; !bad && c.heldRefusal(u) {
			continue // still fenced: it refused a write as another cluster
		}
		if ok {
			c.live[u] = true
		} else {
			delete(c.live, u)
		}
		id, bad := refused[u]
		if !bad {
			delete(c.fenced, u)
			continue
		}
		c.fencedAnswers++
		if prev, had := c.fenced[u]; !had || prev != id {
			c.log.Warn("a store member answers as another cluster of a generation not above the followed one: not using it (keep old members down)",
				"url", u, "its_cluster_id", id.ClusterID, "its_generation", id.Generation, "cluster_id", ours.ClusterID, "generation", ours.Generation)
		}
		c.fenced[u] = id
	}
}

// FencedStores lists the store URLs whose last answer named a cluster the
// client refuses, in URL order.
func (c *Client) FencedStores() []FencedStore {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]FencedStore, 0, len(c.fenced))
	for u, id := range c.fenced {
		out = append(out, FencedStore{URL: u, Identity: id})
	}
	slices.SortFunc(out, func(a, b FencedStore) int {
		if a.URL < b.URL {
			return -1
		}
		if a.URL > b.URL {
			return 1
		}
		return 0
	})
	return out
}

// FencedAnswers counts the answers refused as another, older cluster's
// since the client was made.
func (c *Client) FencedAnswers() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fencedAnswers
}
