package deploytest

import (
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

func init() {
	drills = append(drills, drill{name: "restore", alerts: []string{"SeqsvrStoreClusterChanged", "SeqsvrStoreFencedMembers"}, run: drillRestore,
		// A snapshot every few entries, as a member that ran for a while
		// has one: restarted alone, a member whose state is all in its log
		// applies none of it before its cluster elects a leader, so it
		// answers no cluster ID at all.
		opts: func(o *launch.Options) {
			o.StoreArgs = append(o.StoreArgs, "--snapshot-threshold", "4", "--snapshot-interval", "100ms")
		}})
}

// drillRestore: the store lost and restored from a backup
// (docs/disaster-recovery.md). Every storesvr killed, s1 and s2 wiped, s1
// started with --restore and s2 joined to it: the allocsvr, whose --store
// still lists s1..s3, follows the new cluster (SeqsvrStoreClusterChanged),
// and its runbook shows the new cluster ID and generation on the members
// and on the allocsvr. Then s3 comes back on its old data dir at its old
// address, a member of the old cluster at generation 0: the allocsvr
// refuses it (SeqsvrStoreFencedMembers), and that runbook names s3's URL
// and its old cluster. The fix is the runbook's: s3 stopped and its data
// dir wiped: three surveys later the allocsvr no longer lists it, and the
// alert resolves; s3 then joins the restored cluster afresh and nothing is
// fenced. SeqsvrStoreClusterChanged resolves once its window has no
// change.
func drillRestore(d *drillEnv) {
	a := d.c.Allocs[0]
	s1, s2, s3 := d.c.Stores[0], d.c.Stores[1], d.c.Stores[2]
	launchtest.CreateTag(d.t, d.c, "restored", 100)
	takeIDs(d, a, "restored")
	ldr, err := d.c.Leader(d.ctx)
	if err != nil {
		d.t.Fatal(err)
	}
	for range 8 {
		if _, err := d.c.StoreClient(ldr).ReserveSegment(d.ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "restored", Size: 10})); err != nil {
			d.t.Fatal(err)
		}
	}
	poll.UntilCtx(d.ctx, d.t, "a snapshot in s3's data dir", func() bool {
		metas, _ := filepath.Glob(filepath.Join(s3.DataDir, "snapshots", "*", "meta.json"))
		for _, m := range metas {
			if !strings.HasSuffix(filepath.Dir(m), ".tmp") { // one being written
				return true
			}
		}
		return false
	})
	old, err := d.c.Status(d.ctx, s1)
	if err != nil {
		d.t.Fatal(err)
	}
	if old.GetClusterId() == "" || old.GetGeneration() != 0 {
		d.t.Fatalf("a cluster bootstrapped fresh reports cluster ID %q, generation %d", old.GetClusterId(), old.GetGeneration())
	}
	backup := filepath.Join(d.dir, "seqsvr.bak")
	if out, err := d.shell(`seqctl backup "$BACKUP"`+"\n", nil, []string{"BACKUP=" + backup}, true); err != nil {
		d.t.Fatalf("seqctl backup: %v\n%s", err, out)
	}
	for _, alert := range []string{"SeqsvrStoreClusterChanged", "SeqsvrStoreFencedMembers"} {
		if len(d.alerts(alert, "")) != 0 {
			d.t.Fatalf("%s active before the restore", alert)
		}
	}

	// The store lost: s3's data dir stays as it was (the old member that
	// comes back later), s1's and s2's are gone.
	for _, s := range d.c.Stores {
		if err := s.Kill(); err != nil {
			d.t.Fatal(err)
		}
	}
	for _, s := range []*launch.Proc{s1, s2} {
		if err := s.Wipe(); err != nil {
			d.t.Fatal(err)
		}
	}
	start := time.Now()
	restoreAlone(d, s1, "--restore", backup)
	s2.Peers, s2.Join = "", s1.HTTPAddr
	if err := s2.Start(d.ctx); err != nil {
		d.t.Fatal(err)
	}
	if err := d.c.WaitReady(d.ctx, s2); err != nil {
		d.t.Fatal(err)
	}
	restored, err := d.c.Status(d.ctx, s1)
	if err != nil {
		d.t.Fatal(err)
	}
	newID, gen := restored.GetClusterId(), strconv.FormatInt(restored.GetGeneration(), 10)
	if newID == old.GetClusterId() || restored.GetGeneration() <= 0 {
		d.t.Fatalf("the restored cluster reports cluster ID %q (was %q), generation %s", newID, old.GetClusterId(), gen)
	}
	d.t.Logf("restored in %s: cluster %s generation %s (was %s generation 0)", time.Since(start).Round(time.Millisecond), newID, gen, old.GetClusterId())

	labels := d.firing("SeqsvrStoreClusterChanged", nil)
	changedAt := time.Now()
	if d.proc(labels) != a {
		d.t.Fatalf("SeqsvrStoreClusterChanged fires for %s, not the allocsvr %s", labels["instance"], a.HTTPAddr)
	}
	if n := len(d.alerts("SeqsvrStoreFencedMembers", "")); n != 0 {
		d.t.Fatalf("SeqsvrStoreFencedMembers active with no old member running")
	}
	id := regexp.QuoteMeta(newID)
	d.shows("SeqsvrStoreClusterChanged", d.diagnose("SeqsvrStoreClusterChanged", labels),
		`(?m)^`+regexp.QuoteMeta(s1.URL())+`\s.*\s`+id+`\s+`+gen+`\s*$`,
		`(?m)^`+regexp.QuoteMeta(s2.URL())+`\s.*\s`+id+`\s+`+gen+`\s*$`,
		`(?m)^`+regexp.QuoteMeta(a.URL())+`\s.*\s`+id+`\s+`+gen+`\s+0\s*$`,
		`(?m)^seqsvr_alloc_store_cluster_changes_total 1$`,
		`(?m)^seqsvr_alloc_store_cluster_generation \S+$`)
	takeIDs(d, a, "restored")

	// An old member back (a reboot, a pod on an old volume): its data dir
	// and command line as they were.
	if err := s3.Start(d.ctx); err != nil {
		d.t.Fatal(err)
	}
	labels = d.firing("SeqsvrStoreFencedMembers", nil)
	if d.proc(labels) != a {
		d.t.Fatalf("SeqsvrStoreFencedMembers fires for %s, not the allocsvr %s", labels["instance"], a.HTTPAddr)
	}
	oldID := regexp.QuoteMeta(old.GetClusterId())
	d.shows("SeqsvrStoreFencedMembers", d.diagnose("SeqsvrStoreFencedMembers", labels),
		`(?m)^`+regexp.QuoteMeta(s3.URL())+`\s.*\s`+oldID+`\s+0\s*$`,
		`(?m)^`+regexp.QuoteMeta(a.URL())+`\s.*\s`+id+`\s+`+gen+`\s+1\s*$`,
		`(?m)^fenced: `+regexp.QuoteMeta(s3.URL())+`/? cluster `+oldID+` generation 0$`)

	// The runbook's fix, an operator's step on the old member's host (no
	// command of the runbook's can do it from here): the member stopped
	// for good, its data dir deleted.
	if err := s3.Kill(); err != nil {
		d.t.Fatal(err)
	}
	if err := s3.Wipe(); err != nil {
		d.t.Fatal(err)
	}
	// Its address no longer answers: three surveys (2 s apart) later the
	// allocsvr no longer lists it, and the alert resolves.
	d.resolved("SeqsvrStoreFencedMembers")
	if v, ok := d.metric(`seqsvr_alloc_store_fenced_members{instance="` + a.HTTPAddr + `"}`); !ok || v != 0 {
		d.t.Fatalf("seqsvr_alloc_store_fenced_members is %v (%v) with the old member gone, want 0", v, ok)
	}
	// The address given back to the followed cluster: s3 joined afresh,
	// and nothing is fenced.
	s3.Peers, s3.Join = "", s1.HTTPAddr
	if err := s3.Start(d.ctx); err != nil {
		d.t.Fatal(err)
	}
	if err := d.c.WaitReady(d.ctx, s3); err != nil {
		d.t.Fatal(err)
	}
	takeIDs(d, a, "restored")
	if n := len(d.alerts("SeqsvrStoreFencedMembers", "")); n != 0 {
		d.t.Fatalf("SeqsvrStoreFencedMembers active with s3 back as a member of the restored cluster")
	}
	d.resolved("SeqsvrStoreClusterChanged")
	d.t.Logf("SeqsvrStoreClusterChanged resolved %s after it fired", time.Since(changedAt).Round(time.Second))
}

// restoreAlone starts p alone (no --peers, no --join) with extra flags
// for this start only, as docs/disaster-recovery.md's restore does, and
// waits until it is ready; later starts of p run from its data dir.
func restoreAlone(d *drillEnv, p *launch.Proc, args ...string) {
	d.t.Helper()
	orig := p.ExtraArgs
	p.Peers, p.Join = "", ""
	p.ExtraArgs = append(append([]string{}, orig...), args...)
	err := p.Start(d.ctx)
	p.ExtraArgs = orig
	if err != nil {
		d.t.Fatal(err)
	}
	if err := d.c.WaitReady(d.ctx, p); err != nil {
		d.t.Fatal(err)
	}
}

// takeIDs takes a few IDs of tag from allocsvr a, retrying while it
// reaches the store.
func takeIDs(d *drillEnv, a *launch.Proc, tag string) {
	d.t.Helper()
	if err := errs.Retry(d.ctx, launchtest.Retry(errs.AllocCall), func(ctx context.Context, _ int) error {
		_, err := d.c.AllocClient(a).NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: tag, Count: 5}))
		return err
	}); err != nil {
		d.t.Fatal(err)
	}
}
