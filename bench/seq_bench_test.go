package bench

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/poll"
)

func seqClient(c *launch.Cluster, p *launch.Proc) seqsvrv1connect.SeqServiceClient {
	return seqsvrv1connect.NewSeqServiceClient(c.HTTPClient(), p.URL())
}

func createSpace(tb testing.TB, c *launch.Cluster, req *seqsvrv1.CreateSpaceRequest) {
	tb.Helper()
	leader, _ := leaderURL(tb, c)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.StoreClient(leader).CreateSpace(ctx, connect.NewRequest(req)); err != nil {
		tb.Fatal(err)
	}
}

// nextSeq is one NextSeq of key through p, bounded by a 2 s deadline.
func nextSeq(c *launch.Cluster, p *launch.Proc, space string, key uint64) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := seqClient(c, p).NextSeq(ctx, connect.NewRequest(&seqsvrv1.NextSeqRequest{Space: space, Key: key}))
	return err
}

// owners is p's routing table's ranges for space, nil if p does not answer.
func owners(c *launch.Cluster, p *launch.Proc, space string) []*seqsvrv1.SectionRange {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	t, err := seqClient(c, p).Routing(ctx, connect.NewRequest(&seqsvrv1.RoutingRequest{Space: space}))
	if err != nil {
		return nil
	}
	return t.Msg.GetSections()
}

func seqWrites(tb testing.TB, c *launch.Cluster, p *launch.Proc) uint64 {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := c.AllocClient(p).Status(ctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
	if err != nil {
		tb.Fatal(err)
	}
	return res.Msg.GetSeq().GetMaxSeqWrites()
}

// BenchmarkSeqNetwork drives one allocsvr (3 real storesvrs behind it)
// with NextSeq (seq-raw: a Connect unary POST with a binary proto body
// over loadgen's raw HTTP/1.1 client, 64 workers each cycling through 64
// keys scattered over the 10 sections of a 1M-key space) and, in
// alternating runs with the same generator and worker count, with the
// segment NextIDs count=1 (alloc-raw). x-nextids is NextSeq's calls/s
// over NextIDs'. Both are answered by the HTTP/1.1 front (NextSeq for the
// sections this allocsvr owns, here all of them); the bare net/http
// handler driven by the same raw client runs beside them too
// (x-bare-http). It also reports the allocsvr's max_seq writes (loads and
// raises, from Status) per million NextSeq calls answered.
func BenchmarkSeqNetwork(b *testing.B) {
	c := startCluster(b, 3, 1, "--max-step", "1000000")
	createTag(b, c, "bench", 100000)
	const keys = 1_000_000
	createSpace(b, c, &seqsvrv1.CreateSpaceRequest{Space: "bench", KeyCount: keys, SectionSize: 100_000, Step: 10_000})
	a := c.Allocs[0]
	poll.UntilOK(b, 30*time.Second, "the allocsvr serves the space", func() error { return nextSeq(c, a, "bench", 0) })
	conc := fmt.Sprint(allocConc)
	seqArgs := []string{"-target", "seq-raw", "-url", a.URL(), "-tag", "bench", "-keys", fmt.Sprint(keys), "-c", conc, "-d", roundLoad.String(), "-warmup", warmup}
	idArgs := []string{"-target", "alloc-raw", "-url", a.URL(), "-tag", "bench", "-count", "1", "-c", conc, "-d", roundLoad.String(), "-warmup", warmup}
	// Warm both: the sections' first loads and the segment buffers.
	loadgen(b, "-target", "seq-raw", "-url", a.URL(), "-tag", "bench", "-keys", fmt.Sprint(keys), "-c", conc, "-d", "300ms", "-warmup", "0s")
	loadgen(b, "-target", "alloc-raw", "-url", a.URL(), "-tag", "bench", "-count", "1", "-c", "4", "-d", "300ms", "-warmup", "0s")
	w0 := seqWrites(b, c, a)
	bareArgs := []string{"-target", "http-raw", "-url", "http://" + serveBare(b, "-serve") + "/id", "-c", conc, "-d", roundLoad.String(), "-warmup", warmup}
	var seqs, ids, bares []Result
	for range rounds {
		ids = append(ids, loadgen(b, idArgs...))
		bares = append(bares, loadgen(b, bareArgs...))
		seqs = append(seqs, loadgen(b, seqArgs...))
	}
	writes := seqWrites(b, c, a) - w0
	s, id, bare := merge(seqs), merge(ids), merge(bares)
	if s.Errors > 0 || id.Errors > 0 {
		b.Errorf("errors: NextSeq %d (first: %s), NextIDs %d (first: %s)", s.Errors, s.FirstError, id.Errors, id.FirstError)
	}
	reportLoad(b, s)
	b.ReportMetric(id.OpsPerSec, "nextids-calls/s")
	b.ReportMetric(s.OpsPerSec/id.OpsPerSec, "x-nextids")
	b.ReportMetric(bare.OpsPerSec, "bare-req/s")
	b.ReportMetric(s.OpsPerSec/bare.OpsPerSec, "x-bare-http")
	// Calls measured are a lower bound on the calls served (warm-ups and
	// calls cut off at a run's end are not counted), so this is an upper
	// bound on writes per million calls.
	if s.Ops > 0 {
		b.ReportMetric(float64(writes)*1e6/float64(s.Ops), "writes/1M-calls")
	}
}

// seqLeaseTTL is the store's per-key lease in BenchmarkSeqFailover: the
// default, with the allocsvrs' default heartbeat (500 ms) and fence margin
// (1 s).
const seqLeaseTTL = 5 * time.Second

// BenchmarkSeqFailover measures, against real processes (3 storesvrs, 2
// allocsvrs, space of 2 sections, one per allocsvr), how long a section
// is unserved when its owner goes away: after SIGKILL, from the kill to
// the first NextSeq of a key of that section answered through the other
// allocsvr (which first forwards to the dead owner and fails, then takes
// the section once the lease expired on the store); after SIGTERM, the
// same from the signal (the owner releases its sections as it stops).
// Each is repeated failoverReps times, the owner restarted and the
// sections settled in between; the medians are reported, and their ratios
// to the targets: lease TTL + 2 s after a kill, 2 s after SIGTERM.
func BenchmarkSeqFailover(b *testing.B) {
	const failoverReps = 3
	c := startQuiet(b, launch.Options{Stores: 3, Allocs: 2, StoreArgs: []string{"--seq-lease-ttl", seqLeaseTTL.String()}})
	createSpace(b, c, &seqsvrv1.CreateSpaceRequest{Space: "fo", KeyCount: 200_000, SectionSize: 100_000, Step: 10_000})
	victim, survivor := c.Allocs[0], c.Allocs[1] // a1 owns section 0 once both are live
	const key = 7                                // in section 0
	settle := func() {
		poll.UntilOK(b, time.Minute, "both allocsvrs own their section", func() error {
			r := owners(c, survivor, "fo")
			if len(r) != 2 || r[0].GetOwner() != victim.NodeID || r[1].GetOwner() != survivor.NodeID || r[0].GetNextOwner() != "" {
				return fmt.Errorf("table not settled: %v", r)
			}
			if err := nextSeq(c, victim, "fo", key); err != nil {
				return err
			}
			return nextSeq(c, survivor, "fo", key)
		})
	}
	// The victim may answer forwarded calls for a moment after SIGTERM
	// (it is still serving); what is timed is the new owner serving.
	servedBySurvivor := func() error {
		if err := nextSeq(c, survivor, "fo", key); err != nil {
			return err
		}
		if o := owners(c, survivor, "fo"); len(o) == 0 || o[0].GetOwner() != survivor.NodeID {
			return fmt.Errorf("served, but section 0 is still %v's", o)
		}
		return nil
	}
	settle()
	var kills, terms []time.Duration
	for range failoverReps {
		start := time.Now()
		if err := victim.Kill(); err != nil {
			b.Fatal(err)
		}
		// Timed, for its checks at most 20 ms apart.
		poll.Timed(b, 3*seqLeaseTTL, "served after SIGKILL", servedBySurvivor)
		kills = append(kills, time.Since(start))
		restart(b, c, victim)
		settle()

		start = time.Now()
		if err := victim.Signal(syscall.SIGTERM); err != nil {
			b.Fatal(err)
		}
		poll.Timed(b, 3*seqLeaseTTL, "served after SIGTERM", servedBySurvivor)
		terms = append(terms, time.Since(start))
		if err := victim.Stop(); err != nil { // waits for the exit
			b.Fatal(err)
		}
		restart(b, c, victim)
		settle()
	}
	kill, term := median(kills), median(terms)
	b.Logf("after SIGKILL: %v; after SIGTERM: %v (lease TTL %v)", kills, terms, seqLeaseTTL)
	b.ReportMetric(float64(seqLeaseTTL.Milliseconds()), "lease-ttl-ms")
	b.ReportMetric(float64(kill.Milliseconds()), "kill-ms")
	b.ReportMetric(float64(term.Milliseconds()), "term-ms")
	b.ReportMetric(kill.Seconds()/(seqLeaseTTL+2*time.Second).Seconds(), "x-ttl+2s")
	b.ReportMetric(term.Seconds()/2, "x-2s")
}
