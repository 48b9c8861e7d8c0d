package harness

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/jepsen/checker"
	"github.com/seqsvr/seqsvr/jepsen/history"
)

// The store's reads that answer seqctl and operators (ListTags,
// GetSpace, ListSpaces, GetRouting) and the Leaf routes' refusal of other
// methods than GET run under the faults like every other answering path
// (checker.Listings, checker.SpaceReads, checker.LeafMethods). Their
// shares are small, so the other checks keep their volume:
const (
	// storeReadEvery: one store worker call in storeReadEvery is a store
	// read (storeRead) instead of a reservation or a GetTag.
	storeReadEvery = 20
	// tagListEvery: one tag worker call in tagListEvery is a ListTags
	// listing, among the creates and deletes of the life tags.
	tagListEvery = 8
	// leafMethodEvery: one Leaf GET of an alloc worker in leafMethodEvery
	// is followed by a HEAD or a POST of a Leaf route.
	leafMethodEvery = 20
	// maxListPages bounds one listing: a page token that never ends (a
	// bug) must not hold a worker for the rest of the run. The run has
	// a dozen tags and pages of at least one.
	maxListPages = 200
)

// storeRead is one store read on random members: a ListTags listing (2
// in 6), a GetRouting (2 in 6), a GetSpace or a ListSpaces listing of the
// per-key space (which runs without per-key workers do not have: the
// store answers not_found and an empty listing). It reports whether the
// read was answered.
func (w *workload) storeRead(ctx context.Context, r *rand.Rand, client int) bool {
	var op *history.Op
	switch n := r.Intn(6); {
	case n < 2:
		op = w.listing(ctx, r, client, history.ListTags, w.pickStore)
	case n < 4:
		op = w.spaceRead(ctx, client, w.pickStore(r), history.GetRouting)
	case n < 5:
		op = w.spaceRead(ctx, client, w.pickStore(r), history.GetSpace)
	default:
		op = w.listing(ctx, r, client, history.ListSpaces, w.pickStore)
	}
	return op.OK || op.Answered()
}

// listing lists every tag (kind ListTags) or space (ListSpaces), page
// after page of 1..4 entries, each page from the member pick draws (a
// random one for the workers: a page token is the last name listed, good
// on any member); recorded as one operation from the first page's call
// to the last page's return.
func (w *workload) listing(ctx context.Context, r *rand.Rand, client int, kind string, pick func(*rand.Rand) *launch.Proc) *history.Op {
	p := pick(r)
	op := w.begin(client, kind, "", p)
	size := int32(1 + r.Intn(4))
	token := ""
	var err error
	for {
		op.Pages++
		var names []string
		names, token, err = w.page(ctx, p, kind, size, token)
		op.Names = append(op.Names, names...)
		if err != nil || token == "" {
			break
		}
		if op.Pages >= maxListPages {
			err = connect.NewError(connect.CodeInternal, fmt.Errorf("listing not ended after %d pages (token %q)", op.Pages, token))
			break
		}
		p = pick(r)
	}
	w.end(op, p, err)
	return op
}

// page is one ListTags or ListSpaces call on p: the names and the next
// page's token.
func (w *workload) page(ctx context.Context, p *launch.Proc, kind string, size int32, token string) ([]string, string, error) {
	cctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	cli := w.c.StoreClient(p)
	var names []string
	if kind == history.ListTags {
		resp, err := cli.ListTags(cctx, connect.NewRequest(&seqsvrv1.ListTagsRequest{PageSize: size, PageToken: token}))
		if err != nil {
			return nil, "", err
		}
		for _, t := range resp.Msg.GetTags() {
			names = append(names, t.GetTag())
		}
		return names, resp.Msg.GetNextPageToken(), nil
	}
	resp, err := cli.ListSpaces(cctx, connect.NewRequest(&seqsvrv1.ListSpacesRequest{PageSize: size, PageToken: token}))
	if err != nil {
		return nil, "", err
	}
	for _, s := range resp.Msg.GetSpaces() {
		names = append(names, s.GetSpace())
	}
	return names, resp.Msg.GetNextPageToken(), nil
}

// probeReads are probe's store reads of a member just resumed from a
// pause: a listing of the tags and of the spaces, all pages from p, a
// GetRouting and a GetSpace. Each must still be linearizable: answered
// by the leader, forwarded if p no longer leads.
func (w *workload) probeReads(ctx context.Context, p *launch.Proc, client int) {
	var wg sync.WaitGroup
	only := func(*rand.Rand) *launch.Proc { return p }
	for i, kind := range []string{history.ListTags, history.ListSpaces, history.GetRouting, history.GetSpace} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if kind == history.ListTags || kind == history.ListSpaces {
				w.listing(ctx, rand.New(rand.NewSource(int64(client+i))), client+i, kind, only)
				return
			}
			w.spaceRead(ctx, client+i, p, kind)
		}()
	}
	wg.Wait()
}

// spaceRead is a GetSpace or a GetRouting of the per-key space on p.
func (w *workload) spaceRead(ctx context.Context, client int, p *launch.Proc, kind string) *history.Op {
	cctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	op := w.begin(client, kind, "", p)
	op.Space = seqSpace
	cli := w.c.StoreClient(p)
	var err error
	if kind == history.GetSpace {
		var resp *connect.Response[seqsvrv1.Space]
		if resp, err = cli.GetSpace(cctx, connect.NewRequest(&seqsvrv1.GetSpaceRequest{Space: seqSpace})); err == nil {
			m := resp.Msg
			op.SpaceInfo = &history.SpaceInfo{KeyCount: m.GetKeyCount(), SectionSize: m.GetSectionSize(), SectionCount: m.GetSectionCount(),
				Step: m.GetStep(), CreateTimeMs: m.GetCreateTime().AsTime().UnixMilli()}
		}
	} else {
		var resp *connect.Response[seqsvrv1.RoutingTable]
		if resp, err = cli.GetRouting(cctx, connect.NewRequest(&seqsvrv1.GetRoutingRequest{Space: seqSpace})); err == nil {
			op.Routing = routingOf(resp.Msg)
		}
	}
	w.end(op, p, err)
	return op
}

func routingOf(m *seqsvrv1.RoutingTable) *history.Routing {
	out := &history.Routing{Version: m.GetRoutingVersion(), KeyCount: m.GetKeyCount(), SectionSize: m.GetSectionSize()}
	for _, s := range m.GetSections() {
		out.Runs = append(out.Runs, history.RoutedRun{First: s.GetFirstSection(), Last: s.GetLastSection(), Owner: s.GetOwner(), Next: s.GetNextOwner()})
	}
	return out
}

// leafMethod sends HEAD or POST (half each) to a Leaf route on p over
// leafPath's transport (over HTTP/1.1 the pool of calls the front hands
// off: it declines both methods). Only GET hands out IDs (guarantee 7):
// the answer must be 405 allowing GET (checker.LeafRefused), and never an
// ID.
func (w *workload) leafMethod(ctx context.Context, r *rand.Rand, client int, p *launch.Proc, leafPath string) *history.Op {
	routes := []string{"/api/segment/get/" + w.allocTags[r.Intn(len(w.allocTags))], "/api/snowflake/get/" + w.allocTags[0]}
	if w.cfg.SeqWorkers > 0 {
		key := w.seqKeys[r.Intn(len(w.seqKeys))]
		routes = append(routes, fmt.Sprintf("/api/seq/next/%s/%d", seqSpace, key), fmt.Sprintf("/api/seq/current/%s/%d", seqSpace, key))
	}
	ctx, cancel := context.WithTimeout(ctx, w.cfg.OpTimeout)
	defer cancel()
	op := w.begin(client, history.LeafMethod, "", p)
	op.Path, op.URL, op.Method = leafPath, routes[r.Intn(len(routes))], http.MethodHead
	if r.Intn(2) == 0 {
		op.Method = http.MethodPost
	}
	hc := w.tr.allocH2
	if leafPath == history.PathLeafH1 {
		hc = w.tr.h1(poolOther)
	}
	err := func() error {
		req, err := http.NewRequestWithContext(ctx, op.Method, p.URL()+op.URL, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return leafTransportError(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		op.HTTPStatus, op.Allow = resp.StatusCode, resp.Header.Get("Allow")
		text := strings.TrimSpace(string(body))
		op.Body = text
		if v, perr := strconv.ParseInt(text, 10, 64); perr == nil {
			op.IDs = []int64{v} // an ID handed out to a method that must not take one
		}
		if checker.LeafRefused(resp.StatusCode, op.Allow) && op.IDs == nil {
			return nil
		}
		if checker.LeafStarting(resp.StatusCode, text) && op.IDs == nil {
			// Not a refusal of the method: the checker decides whether the
			// lifetime was still starting (checker.LeafMethods).
			return connect.NewError(connect.CodeUnavailable, fmt.Errorf("%s %s: 503 %q", op.Method, op.URL, text))
		}
		return connect.NewError(connect.CodeInternal, fmt.Errorf("%s %s: %d, Allow %q, body %q; want 405 allowing GET", op.Method, op.URL, resp.StatusCode, op.Allow, text))
	}()
	w.end(op, p, err)
	return op
}
