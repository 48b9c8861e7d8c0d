package deploytest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/errs"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/launch/launchtest"
	"github.com/seqsvr/seqsvr/internal/poll"
)

var drills = []drill{
	{name: "stores-down", alerts: []string{"SeqsvrStoreNoLeader", "SeqsvrTargetDown"}, run: drillStoresDown},
	{name: "store-gone", alerts: []string{"SeqsvrAllocStoreUnreachable", "SeqsvrTagBuffersRunningDry", "SeqsvrSnowflakeFenced", "SeqsvrSeqLeaseLapsing"}, run: drillStoreGone},
	{name: "backup", alerts: []string{"SeqsvrBackupTooOld"}, run: drillBackup},
	{name: "certificates", alerts: []string{"SeqsvrCertificateExpiring"}, run: drillCertificates},
	{name: "member-removed", alerts: []string{"SeqsvrStoreMemberNotReady"}, run: drillMemberRemoved},
	{name: "disk-full", alerts: []string{"SeqsvrStoreDataDirNotWritable", "SeqsvrStoreMemberLagging"}, run: drillDiskFull,
		root: true, opts: func(o *launch.Options) { o.DataDirTmpfs = 64 << 20 }},
	{name: "flapping", alerts: []string{"SeqsvrStoreLeaderFlapping"}, run: drillFlapping},
	{name: "id-space", alerts: []string{"SeqsvrTagIDSpaceNearExhaustion"}, run: drillIDSpace},
	{name: "fsync-slow", alerts: []string{"SeqsvrStoreFsyncSlow"}, run: drillFsyncSlow, root: true},
	{name: "worker-ids", alerts: []string{"SeqsvrWorkerIDsRunningOut"}, run: drillWorkerIDs},
	{name: "clock-offset", alerts: []string{"SeqsvrSnowflakeClockOffset"}, run: drillClockOffset, faults: true},
}

// waitLeaderSeen waits until Prometheus sees a leader (the leader's
// lease checks have two samples), so that SeqsvrStoreNoLeader is
// inactive.
func (d *drillEnv) waitLeaderSeen() {
	d.t.Helper()
	poll.UntilCtx(d.ctx, d.t, "a leader seen by Prometheus", func() bool {
		return len(promQuery(d.t, d.prom, `sum(rate(raft_leader_lastContact_count{job="storesvr"}[1m])) > 0`)) > 0 &&
			len(d.alerts("SeqsvrStoreNoLeader", "")) == 0
	})
}

// drillStoresDown: two of three storesvrs killed. SeqsvrStoreNoLeader's
// runbook (seqctl status) names the two as unreachable, and
// SeqsvrTargetDown's names the instance down; both resolve once the two
// are started again (the runbook: bring them back, their data dirs hold
// the log).
func drillStoresDown(d *drillEnv) {
	d.waitLeaderSeen()
	down := d.c.Stores[1:]
	for _, s := range down {
		if err := s.Kill(); err != nil {
			d.t.Fatal(err)
		}
	}
	labels := d.firing("SeqsvrStoreNoLeader", nil)
	out := d.diagnose("SeqsvrStoreNoLeader", labels)
	for _, s := range down {
		d.shows("SeqsvrStoreNoLeader", out, regexp.QuoteMeta(s.URL())+`\s.*unreachable`)
	}
	labels = d.firing("SeqsvrTargetDown", nil)
	d.shows("SeqsvrTargetDown", d.diagnose("SeqsvrTargetDown", labels), regexp.QuoteMeta(d.proc(labels).URL())+`\s.*unreachable`)
	for _, s := range down {
		if err := s.Start(d.ctx); err != nil {
			d.t.Fatal(err)
		}
	}
	d.resolved("SeqsvrStoreNoLeader")
	d.resolved("SeqsvrTargetDown")
}

// drillStoreGone: every storesvr killed while clients take segment IDs
// from the allocsvr. Its store calls fail (SeqsvrAllocStoreUnreachable),
// its buffers drain (SeqsvrTagBuffersRunningDry), its worker lease and
// its per-key lease lapse (SeqsvrSnowflakeFenced, SeqsvrSeqLeaseLapsing).
// Each runbook's commands show it; all four resolve once the members are
// back.
func drillStoreGone(d *drillEnv) {
	launchtest.CreateTag(d.t, d.c, "dry", 500)
	a := d.c.Allocs[0]
	ctx, cancel := context.WithCancel(d.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the clients: 100 IDs a second, failing or not
		defer wg.Done()
		ac := d.c.AllocClient(a)
		for ctx.Err() == nil {
			cctx, ccancel := context.WithTimeout(ctx, time.Second)
			ac.NextIDs(cctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "dry", Count: 5}))
			ccancel()
			errs.Sleep(ctx, 50*time.Millisecond)
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	d.waitLeaderSeen()
	for _, alert := range []string{"SeqsvrSeqLeaseLapsing", "SeqsvrSnowflakeFenced", "SeqsvrAllocStoreUnreachable", "SeqsvrTagBuffersRunningDry"} {
		if n := len(d.alerts(alert, "")); n != 0 {
			d.t.Fatalf("%s active on a healthy cluster", alert)
		}
	}
	for _, s := range d.c.Stores {
		if err := s.Kill(); err != nil {
			d.t.Fatal(err)
		}
	}
	labels := d.firing("SeqsvrAllocStoreUnreachable", nil)
	out := d.diagnose("SeqsvrAllocStoreUnreachable", labels)
	d.shows("SeqsvrAllocStoreUnreachable", out, regexp.QuoteMeta(d.c.Stores[0].URL())+`\s.*unreachable`, `result="error"`)

	labels = d.firing("SeqsvrTagBuffersRunningDry", nil)
	d.shows("SeqsvrTagBuffersRunningDry", d.diagnose("SeqsvrTagBuffersRunningDry", labels), `seqsvr_segment_buffer_remaining\{.*tag="dry".*\} 0`)

	labels = d.firing("SeqsvrSnowflakeFenced", nil)
	d.shows("SeqsvrSnowflakeFenced", d.diagnose("SeqsvrSnowflakeFenced", labels), `fenced: `)

	labels = d.firing("SeqsvrSeqLeaseLapsing", nil)
	d.shows("SeqsvrSeqLeaseLapsing", d.diagnose("SeqsvrSeqLeaseLapsing", labels), `seqsvr_seq_lease_left_seconds 0`)

	for _, s := range d.c.Stores {
		if err := s.Start(d.ctx); err != nil {
			d.t.Fatal(err)
		}
	}
	for _, alert := range []string{"SeqsvrAllocStoreUnreachable", "SeqsvrTagBuffersRunningDry", "SeqsvrSnowflakeFenced", "SeqsvrSeqLeaseLapsing"} {
		d.resolved(alert)
	}
}

// drillBackup: no backup since the members started (20 s on the drill's
// scale); the runbook shows every member's last backup time at 0, and its
// fix (seqctl backup into a directory, then backup inspect) resolves it.
func drillBackup(d *drillEnv) {
	labels := d.firing("SeqsvrBackupTooOld", nil)
	d.shows("SeqsvrBackupTooOld", d.diagnose("SeqsvrBackupTooOld", labels), `(?m)^seqsvr_store_last_backup_timestamp_seconds 0$`)
	backups := filepath.Join(d.dir, "backups")
	out := d.fix("SeqsvrBackupTooOld", labels, "BACKUP_DIR="+backups)
	d.shows("SeqsvrBackupTooOld", out, `seqsvr-.*\.bak`)
	files, _ := filepath.Glob(filepath.Join(backups, "seqsvr-*.bak"))
	if len(files) != 1 {
		d.t.Fatalf("the fix left %v in %s", files, backups)
	}
	d.resolved("SeqsvrBackupTooOld")
}

// drillCertificates: the run's certificates expire in 7 days, so
// SeqsvrCertificateExpiring fires for each use; the runbook shows the
// expiry of the certificate its labels name. Renewed certificates written
// over the files (the runbook: no restart) resolve every instance.
func drillCertificates(d *drillEnv) {
	for _, use := range []string{"serving", "raft", "client"} {
		labels := d.firing("SeqsvrCertificateExpiring", func(l map[string]string) bool { return l["use"] == use })
		want := time.Now().Add(7 * 24 * time.Hour).UTC().Format("2006-01-02")
		d.shows("SeqsvrCertificateExpiring", d.diagnose("SeqsvrCertificateExpiring", labels), "expires "+want)
	}
	if err := d.sec.Renew(time.Now().Add(90 * 24 * time.Hour)); err != nil {
		d.t.Fatal(err)
	}
	d.resolved("SeqsvrCertificateExpiring")
}

// drillMemberRemoved: a running member removed from the cluster by
// mistake (seqctl member remove) is not ready; the runbook shows why
// (its /readyz, and member list without it), and its fix adds it back
// (seqctl member add with its node ID and addresses), which resolves the
// alert once the member is promoted and ready.
func drillMemberRemoved(d *drillEnv) {
	s, ldr := d.follower()
	if _, err := d.c.StoreClient(ldr).RemoveMember(d.ctx, connect.NewRequest(&seqsvrv1.RemoveMemberRequest{Id: s.NodeID})); err != nil {
		d.t.Fatal(err)
	}
	labels := d.firing("SeqsvrStoreMemberNotReady", nil)
	if d.proc(labels) != s {
		d.t.Fatalf("SeqsvrStoreMemberNotReady fires for %s, not the removed %s", labels["instance"], s.HTTPAddr)
	}
	out := d.diagnose("SeqsvrStoreMemberNotReady", labels)
	d.shows("SeqsvrStoreMemberNotReady", out, `not ready: `, `(?m)^ID\s+RAFT_ADDR`)
	if regexp.MustCompile(`(?m)^` + s.NodeID + `\s`).MatchString(out) {
		d.t.Errorf("SeqsvrStoreMemberNotReady: the runbook's member list shows the removed %s", s.NodeID)
	}
	d.fix("SeqsvrStoreMemberNotReady", labels, "MEMBER_ID="+s.NodeID, "MEMBER_RAFT_ADDR="+s.RaftAddr, "MEMBER_HTTP_ADDR="+s.HTTPAddr)
	d.resolved("SeqsvrStoreMemberNotReady")
}

// drillDiskFull: a follower's data dir (a tmpfs) filled up while the
// others take 1,100 writes. It cannot write (SeqsvrStoreDataDirNotWritable)
// and falls more than 1,000 entries behind (SeqsvrStoreMemberLagging);
// the runbooks show a full file system and the member's applied index
// behind. Space given back, it catches up and both resolve.
func drillDiskFull(d *drillEnv) {
	s, ldr := d.follower()
	if _, _, err := launch.Fill(s.DataDir); err != nil {
		d.t.Fatal(err)
	}
	launchtest.CreateTag(d.t, d.c, "full", 10)
	sc := d.c.StoreClient(ldr)
	for range 1100 {
		if _, err := sc.ReserveSegment(d.ctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "full", Size: 1})); err != nil {
			d.t.Fatal(err)
		}
	}
	dataDir := "DATA_DIR=" + s.DataDir
	labels := d.firing("SeqsvrStoreDataDirNotWritable", nil)
	if d.proc(labels) != s {
		d.t.Fatalf("SeqsvrStoreDataDirNotWritable fires for %s, not %s", labels["instance"], s.HTTPAddr)
	}
	d.shows("SeqsvrStoreDataDirNotWritable", d.diagnose("SeqsvrStoreDataDirNotWritable", labels, dataDir), `\s100%\s`)
	labels = d.firing("SeqsvrStoreMemberLagging", nil)
	if d.proc(labels) != s {
		d.t.Fatalf("SeqsvrStoreMemberLagging fires for %s, not %s", labels["instance"], s.HTTPAddr)
	}
	d.shows("SeqsvrStoreMemberLagging", d.diagnose("SeqsvrStoreMemberLagging", labels, dataDir),
		`(?m)^seqsvr_store_applied_index \d+$`, `\s100%\s`)
	if err := launch.Unfill(s.DataDir); err != nil {
		d.t.Fatal(err)
	}
	d.resolved("SeqsvrStoreDataDirNotWritable")
	d.resolved("SeqsvrStoreMemberLagging")
}

// drillFlapping: the leader killed and started again four times, so
// four elections in the drill's window fire SeqsvrStoreLeaderFlapping;
// its runbook shows each member's term and log fsync p99. It resolves by
// itself once the window has no elections, which the drill does not wait
// for.
func drillFlapping(d *drillEnv) {
	d.waitLeaderSeen()
	for range 4 {
		ldr, err := d.c.Leader(d.ctx)
		if err != nil {
			d.t.Fatal(err)
		}
		if err := ldr.Kill(); err != nil {
			d.t.Fatal(err)
		}
		poll.UntilCtx(d.ctx, d.t, "another leader", func() bool {
			n, err := d.c.Leader(d.ctx)
			return err == nil && n != ldr
		})
		if err := ldr.Start(d.ctx); err != nil {
			d.t.Fatal(err)
		}
		if err := d.c.WaitReady(d.ctx, ldr); err != nil {
			d.t.Fatal(err)
		}
	}
	labels := d.firing("SeqsvrStoreLeaderFlapping", nil)
	d.shows("SeqsvrStoreLeaderFlapping", d.diagnose("SeqsvrStoreLeaderFlapping", labels),
		`STORE\s+ID\s+STATE\s+LEADER\s+TERM`, `raft_boltdb_storeLogs\{quantile="0.99"\} `)
}

// drillIDSpace: a tag created near 2^63-1 (start 9e18, over 90%) and
// used fires SeqsvrTagIDSpaceNearExhaustion; its runbook shows the tag
// and how far it is. Tags are never reset, so nothing resolves it but a
// new tag (the runbook's prose).
func drillIDSpace(d *drillEnv) {
	if err := d.c.CreateTag(d.ctx, &seqsvrv1.CreateTagRequest{Tag: "near-end", Start: 9_000_000_000_000_000_000, Step: 10}); err != nil {
		d.t.Fatal(err)
	}
	if err := errs.Retry(d.ctx, launchtest.Retry(errs.AllocCall), func(ctx context.Context, _ int) error {
		_, err := d.c.AllocClient(d.c.Allocs[0]).NextIDs(ctx, connect.NewRequest(&seqsvrv1.NextIDsRequest{Tag: "near-end", Count: 1}))
		return err
	}); err != nil {
		d.t.Fatal(err)
	}
	labels := d.firing("SeqsvrTagIDSpaceNearExhaustion", nil)
	if labels["tag"] != "near-end" {
		d.t.Fatalf("fires for tag %q", labels["tag"])
	}
	d.shows("SeqsvrTagIDSpaceNearExhaustion", d.diagnose("SeqsvrTagIDSpaceNearExhaustion", labels), `near-end\s.*90000000000000000\d\d`, `9[0-9]\.[0-9]+% of 2\^63-1`)
}

// drillWorkerIDs: 830 worker IDs of the layout's 1,024 registered (node
// IDs no allocsvr runs, as pods restarting under new names leave them),
// so SeqsvrWorkerIDsRunningOut fires; its runbook shows the IDs in use
// against the limit. The runbook's remedy, a lower --worker-retention on
// the storesvrs (a rolling restart), frees them once their leases end,
// and the alert resolves.
func drillWorkerIDs(d *drillEnv) {
	sc := d.c.StoreClient(d.c.Stores[0])
	for i := range 830 {
		req := &seqsvrv1.RegisterWorkerRequest{NodeId: fmt.Sprintf("gone-%d", i), InstanceId: fmt.Sprintf("i-%d", i), NowMs: time.Now().UnixMilli()}
		if err := errs.Retry(d.ctx, launchtest.Retry(errs.AllocCall), func(ctx context.Context, _ int) error {
			_, err := sc.RegisterWorker(ctx, connect.NewRequest(req))
			return err
		}); err != nil {
			d.t.Fatal(err)
		}
	}
	labels := d.firing("SeqsvrWorkerIDsRunningOut", nil)
	d.shows("SeqsvrWorkerIDsRunningOut", d.diagnose("SeqsvrWorkerIDsRunningOut", labels),
		`(?m)^seqsvr_store_worker_ids_in_use 83[01]$`, `(?m)^seqsvr_store_worker_ids_limit 1024$`)
	for _, s := range d.c.Stores {
		s.ExtraArgs = append(s.ExtraArgs, "--worker-retention=1s")
		if err := s.Restart(d.ctx); err != nil {
			d.t.Fatal(err)
		}
		if err := d.c.WaitReady(d.ctx, s); err != nil {
			d.t.Fatal(err)
		}
	}
	d.resolved("SeqsvrWorkerIDsRunningOut")
}

// drillClockOffset: the allocsvr (a -tags faults build, whose clock can
// be moved) restarted with its clock 900 ms ahead
// of the store leader's (within the 1 s it may start with, beyond the
// rule's 800 ms) fires SeqsvrSnowflakeClockOffset; its runbook shows the
// offset. Its clock set right (the runbook: slew it back), the alert
// resolves.
func drillClockOffset(d *drillEnv) {
	a := d.c.Allocs[0]
	a.Env = append(a.Env, "SEQSVR_FAULTS_CLOCK_OFFSET_MS=900")
	if err := a.Restart(d.ctx); err != nil {
		d.t.Fatal(err)
	}
	labels := d.firing("SeqsvrSnowflakeClockOffset", nil)
	d.shows("SeqsvrSnowflakeClockOffset", d.diagnose("SeqsvrSnowflakeClockOffset", labels), `(?m)^seqsvr_snowflake_clock_offset_ms (8[0-9][0-9]|9[0-9][0-9])$`)
	a.Env = a.Env[:len(a.Env)-1]
	if err := a.Restart(d.ctx); err != nil {
		d.t.Fatal(err)
	}
	d.resolved("SeqsvrSnowflakeClockOffset")
}

// drillFsyncSlow: a follower's data dir moved onto a disk of its own
// whose writes are then limited to 20 a second (a loop device under the
// blkio throttle), while clients reserve segments: its log fsync p99
// passes 50 ms and SeqsvrStoreFsyncSlow fires for it; the runbook's
// commands show each member's p99. The disk fast again (the runbook:
// replace it), the p99 falls and the alert resolves.
func drillFsyncSlow(d *drillEnv) {
	if why := slowDiskSupported(); why != "" {
		d.t.Skip(why)
	}
	s, ldr := d.follower()
	if err := s.Kill(); err != nil {
		d.t.Fatal(err)
	}
	old := s.DataDir + ".old"
	if err := os.Rename(s.DataDir, old); err != nil {
		d.t.Fatal(err)
	}
	if err := os.Mkdir(s.DataDir, 0o755); err != nil {
		d.t.Fatal(err)
	}
	disk := mountSlowDisk(d.t, d.dir, s.DataDir)
	if out, err := exec.Command("cp", "-a", old+"/.", s.DataDir+"/").CombinedOutput(); err != nil {
		d.t.Fatalf("cp: %v\n%s", err, out)
	}
	if err := s.Start(d.ctx); err != nil {
		d.t.Fatal(err)
	}
	if err := d.c.WaitReady(d.ctx, s); err != nil {
		d.t.Fatal(err)
	}
	launchtest.CreateTag(d.t, d.c, "slow", 10)
	ctx, cancel := context.WithCancel(d.ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the clients: a few reservations a second, each an fsync on every member
		defer wg.Done()
		sc := d.c.StoreClient(ldr)
		for ctx.Err() == nil {
			cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
			sc.ReserveSegment(cctx, connect.NewRequest(&seqsvrv1.ReserveSegmentRequest{Tag: "slow", Size: 1}))
			ccancel()
			errs.Sleep(ctx, 100*time.Millisecond)
		}
	}()
	defer func() { cancel(); wg.Wait() }()
	disk.limit(20)
	labels := d.firing("SeqsvrStoreFsyncSlow", nil)
	if d.proc(labels) != s {
		d.t.Fatalf("SeqsvrStoreFsyncSlow fires for %s, not %s", labels["instance"], s.HTTPAddr)
	}
	out := d.diagnose("SeqsvrStoreFsyncSlow", labels)
	d.shows("SeqsvrStoreFsyncSlow", out, regexp.QuoteMeta(s.URL())+`\s+raft_boltdb_storeLogs\{quantile="0.99"\} ([5-9][0-9]|[1-9][0-9]{2,})(\.|\s)`)
	disk.limit(0)
	d.resolved("SeqsvrStoreFsyncSlow")
}
