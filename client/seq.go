package client

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// routeTable is a space's routing table as the client last fetched it:
// which allocsvr owns each run of sections.
type routeTable struct {
	version     uint64
	sectionSize uint64
	runs        []ownerRun // by first section
}

type ownerRun struct {
	first, last uint64
	ep          *endpoint // nil while unowned or without a URL
}

// owner of key, or nil (then any endpoint forwards).
func (t *routeTable) owner(key uint64) *endpoint {
	if t == nil || t.sectionSize == 0 {
		return nil
	}
	s := key / t.sectionSize
	i := sort.Search(len(t.runs), func(i int) bool { return t.runs[i].last >= s })
	if i < len(t.runs) && t.runs[i].first <= s {
		return t.runs[i].ep
	}
	return nil
}

// spaceRoutes holds one space's cached table; at most one refresh runs
// at a time.
type spaceRoutes struct {
	table      atomic.Pointer[routeTable]
	seen       atomic.Uint64 // the largest routing_version any answer carried
	refreshing atomic.Bool
}

func (c *Client) routesOf(space string) *spaceRoutes {
	if r, ok := c.routes.Load(space); ok {
		return r.(*spaceRoutes)
	}
	r, _ := c.routes.LoadOrStore(space, &spaceRoutes{})
	return r.(*spaceRoutes)
}

// RoutingVersion is the version of space's routing table the client
// routes by (0 before it fetched one).
func (c *Client) RoutingVersion(space string) uint64 {
	if t := c.routesOf(space).table.Load(); t != nil {
		return t.version
	}
	return 0
}

// observe notes the routing_version an answer carried and refreshes the
// table in the background when it is newer than the cached one.
func (c *Client) observe(space string, r *spaceRoutes, v uint64) {
	for {
		old := r.seen.Load()
		if v <= old || r.seen.CompareAndSwap(old, v) {
			break
		}
	}
	if t := r.table.Load(); t != nil && t.version >= v {
		return
	}
	if !r.refreshing.CompareAndSwap(false, true) {
		return
	}
	if !c.goBG(func(ctx context.Context) { c.refresh(ctx, space, r) }) {
		r.refreshing.Store(false)
	}
}

// refresh fetches space's table from any allocsvr and installs it if
// newer than the cached one. An allocsvr answers the table as it last saw
// it, which may still be older than an answer's version: then a later
// answer triggers another refresh.
func (c *Client) refresh(ctx context.Context, space string, r *spaceRoutes) {
	defer r.refreshing.Store(false)
	var tab *seqsvrv1.RoutingTable
	_, err := c.do(ctx, "Routing", nil, false, func(ctx context.Context, ep *endpoint) error {
		res, err := ep.seq.Routing(ctx, connect.NewRequest(&seqsvrv1.RoutingRequest{Space: space}))
		if err != nil {
			return err
		}
		tab = res.Msg
		return nil
	})
	if err != nil {
		c.cfg.logger.Warn("seqsvr client: routing refresh failed", "space", space, "err", err)
		return
	}
	t := &routeTable{version: tab.GetRoutingVersion(), sectionSize: tab.GetSectionSize()}
	for _, s := range tab.GetSections() {
		t.runs = append(t.runs, ownerRun{first: s.GetFirstSection(), last: s.GetLastSection(), ep: c.owner(s.GetOwnerUrl())})
	}
	sort.Slice(t.runs, func(i, j int) bool { return t.runs[i].first < t.runs[j].first })
	for {
		old := r.table.Load()
		if old != nil && old.version >= t.version {
			return
		}
		if r.table.CompareAndSwap(old, t) {
			c.cfg.logger.Debug("seqsvr client: routing table", "space", space, "version", t.version, "runs", len(t.runs))
			return
		}
	}
}

// NextSeq takes the next value of key's sequence in space, from the
// allocsvr that owns key's section when the cached routing table names
// one (else any allocsvr, which forwards).
func (c *Client) NextSeq(ctx context.Context, space string, key uint64) (int64, error) {
	r := c.routesOf(space)
	var seq int64
	var ver uint64
	_, err := c.do(ctx, "NextSeq", r.table.Load().owner(key), false, func(ctx context.Context, ep *endpoint) error {
		res, err := ep.seq.NextSeq(ctx, connect.NewRequest(&seqsvrv1.NextSeqRequest{Space: space, Key: key}))
		if err != nil {
			return err
		}
		seq, ver = res.Msg.GetSeq(), res.Msg.GetRoutingVersion()
		return nil
	})
	if err != nil {
		return 0, err
	}
	c.observe(space, r, ver)
	return seq, nil
}

// NextSeqs takes the next value of each key's sequence, one per key in
// order (1..MaxCount keys, repeats allowed: each occurrence takes the
// next value). Keys owned by different allocsvrs go to each owner in
// parallel, one call per owner.
func (c *Client) NextSeqs(ctx context.Context, space string, keys []uint64) ([]int64, error) {
	return c.seqs(ctx, "NextSeqs", space, keys, func(ctx context.Context, ep *endpoint, keys []uint64) ([]int64, uint64, error) {
		res, err := ep.seq.NextSeqs(ctx, connect.NewRequest(&seqsvrv1.NextSeqsRequest{Space: space, Keys: keys}))
		if err != nil {
			return nil, 0, err
		}
		return res.Msg.GetSeqs(), res.Msg.GetRoutingVersion(), nil
	})
}

// CurrentSeqs reads each key's sequence without taking a value (0 for a
// key never used): at least every NextSeq of that key answered before
// the call began.
func (c *Client) CurrentSeqs(ctx context.Context, space string, keys []uint64) ([]int64, error) {
	return c.seqs(ctx, "CurrentSeqs", space, keys, func(ctx context.Context, ep *endpoint, keys []uint64) ([]int64, uint64, error) {
		res, err := ep.seq.CurrentSeqs(ctx, connect.NewRequest(&seqsvrv1.CurrentSeqsRequest{Space: space, Keys: keys}))
		if err != nil {
			return nil, 0, err
		}
		return res.Msg.GetSeqs(), res.Msg.GetRoutingVersion(), nil
	})
}

type seqCall func(ctx context.Context, ep *endpoint, keys []uint64) ([]int64, uint64, error)

// seqs splits keys by owner, calls each owner (in parallel when more
// than one), and puts the answers back in the order of keys.
func (c *Client) seqs(ctx context.Context, what, space string, keys []uint64, call seqCall) ([]int64, error) {
	if len(keys) < 1 || len(keys) > MaxCount {
		return nil, invalid("%d keys, want 1..%d", len(keys), MaxCount)
	}
	r := c.routesOf(space)
	tab := r.table.Load()
	type group struct {
		ep   *endpoint
		idx  []int
		keys []uint64
	}
	var groups []*group
	byEP := map[*endpoint]*group{}
	for i, k := range keys {
		ep := tab.owner(k)
		g := byEP[ep]
		if g == nil {
			g = &group{ep: ep}
			byEP[ep] = g
			groups = append(groups, g)
		}
		g.idx, g.keys = append(g.idx, i), append(g.keys, k)
	}
	out := make([]int64, len(keys))
	run := func(ctx context.Context, g *group) (uint64, error) {
		var seqs []int64
		var ver uint64
		_, err := c.do(ctx, what, g.ep, false, func(ctx context.Context, ep *endpoint) error {
			s, v, err := call(ctx, ep, g.keys)
			if err == nil && len(s) != len(g.keys) {
				return connect.NewError(connect.CodeInternal, errShort)
			}
			seqs, ver = s, v
			return err
		})
		if err != nil {
			return 0, err
		}
		for j, i := range g.idx {
			out[i] = seqs[j]
		}
		return ver, nil
	}
	if len(groups) == 1 {
		ver, err := run(ctx, groups[0])
		if err != nil {
			return nil, err
		}
		c.observe(space, r, ver)
		return out, nil
	}
	var wg sync.WaitGroup
	vers := make([]uint64, len(groups))
	errs := make([]error, len(groups))
	for i, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			vers[i], errs[i] = run(ctx, g)
		}()
	}
	wg.Wait()
	for i := range groups {
		if errs[i] != nil {
			return nil, errs[i]
		}
		c.observe(space, r, vers[i])
	}
	return out, nil
}
