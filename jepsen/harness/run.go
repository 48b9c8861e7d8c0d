package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/jepsen/checker"
	"github.com/seqsvr/seqsvr/jepsen/history"
	"github.com/seqsvr/seqsvr/jepsen/nemesis"
)

// Raft timing of the stores. The storage defaults (200 ms) suit an idle
// LAN; on a loaded 2-core box running the race detector they cause
// elections nobody injected, which only blur what the nemesis did.
// ElectionTimeout also sizes the pauses ("several election timeouts").
const (
	ElectionTimeout    = 500 * time.Millisecond
	leaderLeaseTimeout = 400 * time.Millisecond
)

// storeTiming and allocLease are the flags every run passes: the Raft
// timing above, and snowflake lease renewals well inside the stores'
// --worker-lease-ttl (the allocsvr default renews every 3 s, which with a
// 3 s TTL would fence it most of the time).
var (
	storeTiming = []string{"--heartbeat-timeout", ElectionTimeout.String(), "--election-timeout", ElectionTimeout.String(),
		"--leader-lease-timeout", leaderLeaseTimeout.String()}
	allocLease = []string{"--snowflake-renew-interval", "300ms", "--snowflake-fence-margin", snowflakeFenceMargin.String(),
		"--snowflake-max-clock-offset", snowflakeMaxClockOffset.String()}
)

// snowflakeFenceMargin and snowflakeMaxClockOffset are the allocsvrs'
// snowflake margins, which the aimed faults are sized by.
const (
	snowflakeFenceMargin    = time.Second
	snowflakeMaxClockOffset = time.Second
)

// Run executes one test and returns its report; err is for a run that
// could not be carried out (build, start), not for a checker failure.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	started := time.Now()
	out := cfg.OutDir
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	if err := launch.Build(ctx, cfg.BinDir, "faults"); err != nil {
		return nil, err
	}
	var baseDir string
	var base Base
	if cfg.Upgrade {
		var err error
		if baseDir, base, err = baseBinaries(ctx, cfg); err != nil {
			return nil, err
		}
	}
	rep := &Report{Name: cfg.Name, Seed: cfg.Seed, OutDir: out, Bugs: cfg.Bugs, Faults: map[string]int{}}

	nemesisFile, err := os.Create(filepath.Join(out, "nemesis.log"))
	if err != nil {
		return nil, err
	}
	defer nemesisFile.Close()
	rec := history.NewRecorder()
	nlog := nemesis.NewLog(rec.Start(), io.MultiWriter(nemesisFile, logWriter{cfg.Logf}))

	opts := launch.Options{
		BinDir: cfg.BinDir, Dir: out, Stores: cfg.Stores, Allocs: cfg.Allocs,
		StoreArgs:    append(append([]string{"--worker-lease-ttl", cfg.LeaseTTL.String()}, storeTiming...), cfg.StoreArgs...),
		AllocArgs:    append(append([]string{"--max-step", strconv.Itoa(allocMaxStep)}, allocLease...), cfg.AllocArgs...),
		Logf:         cfg.Logf,
		DataDirTmpfs: cfg.DataDirTmpfs,
		Ordinal:      cfg.Ordinal,
	}
	if cfg.SeqWorkers > 0 {
		opts.StoreArgs = append(opts.StoreArgs, seqStoreArgs(cfg)...)
		opts.AllocArgs = append(opts.AllocArgs, seqAllocArgs(cfg)...)
	}
	if len(cfg.Bugs) > 0 {
		opts.Env = []string{"SEQSVR_FAULTS_BUGS=" + strings.Join(cfg.Bugs, ",")}
	}
	if os.Getenv("GOCOVERDIR") != "" && os.Getenv(launch.CoverPkgEnv) != "" {
		// Coverage binaries write their counters every second: most of
		// them end by SIGKILL, which writes nothing.
		opts.Env = append(opts.Env, "SEQSVR_FAULTS_COVER_FLUSH=1s")
	}
	var net *nemesis.Net
	var names []string
	if cfg.Partitions {
		for i := 1; i <= cfg.Stores; i++ {
			names = append(names, fmt.Sprintf("s%d", i))
		}
		for i := 1; i <= cfg.Allocs; i++ {
			names = append(names, fmt.Sprintf("a%d", i), fmt.Sprintf("a%dt", i))
		}
		names = append(names, nemesis.ExtraAlloc) // seq-add-alloc's
		net, err = nemesis.NewNet(names)
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("partitions not run: %v", err))
			net = nil
		} else {
			defer net.Close()
			opts.Host, opts.Wrap = net.Host, net.Wrap
			rep.Notes = append(rep.Notes, "partitions: network namespaces + blackhole routes")
		}
	}
	if !cfg.Plain {
		// The secure mode is the tested mode: one CA and certificate per
		// run, valid for every address a process may have (loopback, or
		// its namespace's), and a token per role.
		var hosts []string
		if net != nil {
			for _, name := range names {
				hosts = append(hosts, net.Host(name))
			}
		}
		if cfg.Ordinal != "" {
			// The members call each other by name, and by address
			// without namespaces (launch.OrdinalHost).
			for i := 1; i <= cfg.Stores; i++ {
				hosts = append(hosts, launch.OrdinalName(i, cfg.Ordinal))
				if net == nil {
					hosts = append(hosts, launch.OrdinalHost(i))
				}
			}
		}
		if opts.Security, err = launch.NewSecurity(filepath.Join(out, "tls"), hosts...); err != nil {
			return nil, err
		}
		rep.Notes = append(rep.Notes, "secure: HTTPS, bearer tokens, client certificates, Raft over mutual TLS")
	}
	c, err := launch.New(opts)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	var up *upgrader
	if cfg.Upgrade {
		if up, err = newUpgrader(c, opts.Security, nlog, cfg.BinDir, baseDir, base, cfg.Duration); err != nil {
			return nil, err
		}
		rep.Notes = append(rep.Notes, "upgrade from the base release "+up.out.Base)
	}
	if err := c.Launch(ctx); err != nil {
		return nil, err
	}

	tr, err := newTransports(opts.Security)
	if err != nil {
		return nil, err
	}
	w := &workload{cfg: cfg, c: c, tr: tr, rec: rec, runID: fmt.Sprintf("%s-%d-%d", cfg.Name, cfg.Seed, time.Now().UnixNano())}
	for i := range cfg.LinTags {
		w.linTags = append(w.linTags, fmt.Sprintf("lin-%d", i))
	}
	for i := range cfg.AllocTags {
		w.allocTags = append(w.allocTags, fmt.Sprintf("ids-%d", i))
	}
	for i := range cfg.LifeTags {
		w.lifeTags = append(w.lifeTags, fmt.Sprintf("life-%d", i))
	}
	w.allocs = append(w.allocs, c.Allocs...)
	w.soloTags = map[string]string{}
	var soloTags []string
	for _, a := range c.Allocs {
		w.soloTags[a.Name] = checker.SoloPrefix + a.Name
		soloTags = append(soloTags, checker.SoloPrefix+a.Name)
	}
	if err := createTags(ctx, c, w.linTags, 1000); err != nil {
		return nil, err
	}
	if err := createTags(ctx, c, w.allocTags, 50); err != nil {
		return nil, err
	}
	if err := createTags(ctx, c, soloTags, soloStep); err != nil {
		return nil, err
	}
	// Created like the others, with start 0, as the store model assumes
	// of every tag at the start of the history.
	if err := createTags(ctx, c, w.lifeTags, 10); err != nil {
		return nil, err
	}
	if cfg.SeqWorkers > 0 {
		w.seqKeys = hotKeys(cfg.SeqHotKeys)
		if err := createSpace(ctx, c, cfg.SeqStep, w.seqKeys); err != nil {
			return nil, err
		}
	}

	faults, err := nemesis.Lookup(cfg.Faults)
	if err != nil {
		return nil, err
	}
	env := &nemesis.Env{C: c, Log: nlog, Net: net, ElectionTimeout: ElectionTimeout, LeaseTTL: cfg.LeaseTTL, SeqLeaseTTL: cfg.SeqLeaseTTL,
		SnowflakeFenceMargin: snowflakeFenceMargin, SnowflakeMaxClockOffset: snowflakeMaxClockOffset,
		SeqSpace: seqSpace, AddAlloc: w.addAlloc, RemoveAlloc: w.removeAlloc, OperatorTags: w.allocTags,
		Reserve: w.nemesisReserve, Resend: w.nemesisResend, LastSnowflakeMs: w.lastSnowflakeMs, Snowflake: w.nemesisSnowflake, BackupDir: filepath.Join(out, "backups")}
	probeClient := cfg.StoreWorkers + cfg.AllocWorkers + cfg.TagWorkers + cfg.SeqWorkers
	var probeMu sync.Mutex
	env.AfterResume = func(p *launch.Proc) {
		probeMu.Lock()
		defer probeMu.Unlock()
		w.probe(p, probeClient)
	}

	// An upgrade run lasts until its steps are done (each waits for its
	// process to be ready, long on a loaded machine), one more slot of
	// load after them, at most upgradeOverrun past its Duration: a step
	// cut off by the end of the load would leave the verdict short.
	runD := cfg.Duration
	if up != nil {
		runD += upgradeOverrun
	}
	runCtx, stop := context.WithTimeout(ctx, runD)
	defer stop()
	go tr.renew(runCtx)
	front := newFrontTally(tr.allocH1)
	go front.run(runCtx, w.procs)
	wg := w.run(runCtx, cfg.Seed)
	var nemErr error
	if len(faults) > 0 {
		nemErr = nemesis.Schedule(runCtx, env, faults, cfg.Seed, cfg.Copies, cfg.GapLo, cfg.GapHi)
	}
	if up != nil {
		up.run(runCtx)
		_ = launch.Sleep(runCtx, up.gap)
		stop()
	}
	<-runCtx.Done()
	wg.Wait()
	if up != nil {
		up.finish()
	}
	if nemErr != nil {
		rep.Notes = append(rep.Notes, "nemesis error: "+nemErr.Error())
	}

	// Heal everything, let the cluster settle, then learn the unknowns and
	// the final state.
	if net != nil {
		_ = net.Heal()
	}
	for _, p := range c.All() {
		if p.Paused() {
			_ = p.Resume()
		}
		if !p.Running() {
			_ = p.Start(ctx)
		}
	}
	qctx, qcancel := context.WithTimeout(ctx, 60*time.Second)
	defer qcancel()
	for _, s := range c.Stores {
		if err := c.WaitReady(qctx, s); err != nil {
			rep.Notes = append(rep.Notes, "quiesce: "+err.Error())
		}
	}
	// The operator fault re-creates what it deletes before it returns;
	// should a re-creation have failed, this one (already_exists counts as
	// done) leaves no alloc tag without a final max_id.
	if err := createTags(qctx, c, w.allocTags, 50); err != nil {
		rep.Notes = append(rep.Notes, "quiesce: "+err.Error())
	}
	ops := rec.Ops()
	rctx, rcancel := context.WithTimeout(ctx, 60*time.Second)
	defer rcancel()
	w.resolve(rctx, ops)
	if cfg.SeqWorkers > 0 {
		// After the probes' clients (probeClient + i per lin tag).
		if note := w.seqFinal(ctx, probeClient+cfg.LinTags); note != "" {
			rep.Notes = append(rep.Notes, note)
		}
		ops = rec.Ops()
	}
	fctx, fcancel := context.WithTimeout(ctx, 30*time.Second)
	defer fcancel()
	layout := snowflakeLayout(fctx, c)
	front.read(fctx, w.procs())
	rep.FrontAnswered, rep.FrontHandoffs = front.figures()
	// The allocsvrs write on their own (prefetch, lease renewals): stop
	// them so the members can reach one applied index and stay there.
	for _, a := range c.Allocs {
		_ = a.Kill()
	}
	tags := append(append(append([]string{}, w.linTags...), w.allocTags...), soloTags...)
	final, note := finalState(fctx, c, tags)
	if note != "" {
		rep.Notes = append(rep.Notes, note)
	}
	// The members' raft logs, compared now and kept only if a checker
	// fails (below): the data dirs go with the cluster (tmpfs mounts
	// too), and a lost or diverged entry can only be found in them. They
	// are compared up to the applied index every member reached: later
	// entries are not committed and may differ.
	var applied uint64
	if idx, err := appliedIndexes(fctx, c); err == nil && len(idx) > 0 {
		applied = slices.Min(idx)
	}
	keptDir, kept := keepRaftData(out, c)
	var members []string
	for _, s := range c.Stores {
		members = append(members, s.Name)
	}
	raftLogs := compareRaftLogs(keptDir, members, applied)
	c.Close()
	rep.Faults, rep.FaultTotal = nlog.Counts()
	if n := env.BackupsTaken(); n > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("backups taken: %d", n))
	}

	// Save before checking, so that a run whose checking is cut short can
	// still be checked offline (Recheck) from the same inputs.
	in := Inputs{Ops: ops, Events: nlog.Events(), Final: &Final{Tags: tags, MaxID: final, Snowflake: layout,
		LeaseTTL: cfg.LeaseTTL, SeqLeaseTTL: cfg.SeqLeaseTTL, RaftLogs: raftLogs}}
	if up != nil {
		in.Final.Upgrade = &up.out
	}
	if err := SaveInputs(out, in); err != nil {
		return nil, err
	}
	if err := saveNemesis(out, nlog); err != nil {
		return nil, err
	}
	rep.check(in)
	if len(rep.Failed()) == 0 {
		_ = os.RemoveAll(keptDir)
	} else {
		rep.Notes = append(rep.Notes, kept)
	}
	rep.FaultKinds = faultFigures(nlog.Events(), ops)
	rep.Margins = nemesis.MarginHits(nlog.Events())
	rep.Elapsed = time.Since(started)

	// The Raft data is large and useless once checked; the logs stay.
	_ = os.RemoveAll(filepath.Join(out, "data"))
	return rep, rep.write()
}

type logWriter struct{ logf func(string, ...any) }

func (l logWriter) Write(b []byte) (int, error) {
	l.logf("nemesis: %s", strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

func createTags(ctx context.Context, c *launch.Cluster, tags []string, step int64) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for _, t := range tags {
		if err := c.CreateTag(ctx, &seqsvrv1.CreateTagRequest{Tag: t, Step: step}); err != nil {
			return err
		}
	}
	return nil
}

// snowflakeLayout asks the allocsvrs for the layout their IDs use,
// assuming the default when none answers.
func snowflakeLayout(ctx context.Context, c *launch.Cluster) Layout {
	for _, a := range c.Allocs {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		resp, err := c.AllocClient(a).Status(cctx, connect.NewRequest(&seqsvrv1.StatusRequest{}))
		cancel()
		if err != nil {
			continue
		}
		if ly := resp.Msg.GetSnowflake().GetLayout(); ly.GetWorkerBits() > 0 {
			return Layout{EpochMs: ly.GetEpochMs(), WorkerBits: int(ly.GetWorkerBits()), SequenceBits: int(ly.GetSequenceBits()), From: a.Name}
		}
	}
	return Layout{WorkerBits: 10, SequenceBits: 12}
}

// The solo tags' stored step and the allocsvrs' --max-step: together the
// sizes a solo tag's segment can have (checker.SegmentBounds).
const (
	soloStep     = 50
	allocMaxStep = 200
)
