// Command benchpeers is `make bench-peers`: it starts seqsvr and the systems
// a team would deploy instead as real processes on this machine, drives
// each with the same load generator loop at the same client counts,
// alternating the runs, kills leaders under load, and writes the report
// (docs/benchmarks-peers.md) with SVG plots (docs/plots/peers-*.svg).
//
//	benchpeers -bin bin/bench -etcd .tools/bin/etcd -out docs [-short]
//	benchpeers -bin bin/bench -etcd .tools/bin/etcd -smoke
//	benchpeers -bin bin/bench -etcd .tools/bin/etcd -durable-only -clients 64 -out /tmp/x
//
// A peer that cannot be started (MariaDB or Redis not installed, no etcd
// binary) is left out with a line in the report saying so; seqsvr itself
// must run.
//
// -smoke is `make bench-peers-smoke`, part of `make test`: the same run cut
// to about a second per target at two client counts and one leader kill
// per system, writing into a temporary directory (never docs/), then
// checking its own output (smoke.go). It exits non-zero when a target made
// no successful call, a peer that is installed failed to start, or the
// report or a plot is missing or malformed; a peer that is not installed is
// printed as a SKIPPED line.
//
// -durable-only measures just the durable write path (ReserveSegment, etcd,
// MariaDB) and writes its report (the other sections empty) to -out: the
// quick way to check the ReserveSegment-vs-etcd goal.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
	"github.com/seqsvr/seqsvr/internal/launch"
	"github.com/seqsvr/seqsvr/internal/raftconf"
)

// config is the run's shape; the report prints it.
type config struct {
	binDir, etcdBin, outDir, workDir, peerbenchDir string
	short, smoke                                   bool
	clients                                        []int
	rounds                                         int
	warm, dur                                      time.Duration
	failClients, kills                             int
	failDur, killAfter                             time.Duration
	etcdHeartbeatMs, etcdElectionMs                int
	reserveSize, idStep                            int64
	noSweeps, durableOnly                          bool
}

func main() {
	var (
		cfg     config
		clients string
		sweeps  = flag.Bool("sweeps", true, "run the throughput sweeps (false: only the leader kills and the snowflake peers, to look at a failover)")
		short   = flag.Bool("short", false, "a quick run (about a minute): fewer client counts, one round, short runs")
		durOnly = flag.Bool("durable-only", false, "only the durable write path's sweep (ReserveSegment vs etcd vs MariaDB): no ID path, no leader kills, no snowflake peers; give -out a scratch directory")
		smoke   = flag.Bool("smoke", false, "the make test run (under a minute after the build): 1 and 16 clients, 1 s runs, one kill each, report into a temporary -out, then checked; non-zero exit on a failed check")
	)
	flag.StringVar(&cfg.binDir, "bin", "bin/bench", "directory holding storesvr, allocsvr, loadgen, peerload and leafsvr")
	flag.StringVar(&cfg.etcdBin, "etcd", ".tools/bin/etcd", "the etcd server binary")
	flag.StringVar(&cfg.outDir, "out", "docs", "where benchmarks-peers.md and plots/ are written")
	flag.StringVar(&cfg.workDir, "work", "", "data and logs of the processes (default: a new temporary directory, removed after)")
	flag.StringVar(&cfg.peerbenchDir, "snowflake", "alloc/peerbench", "the snowflake peer module to run (empty: skip)")
	flag.StringVar(&clients, "clients", "1,4,16,64,256", "client counts")
	flag.IntVar(&cfg.rounds, "rounds", 4, "alternating rounds per target and client count")
	flag.DurationVar(&cfg.warm, "warmup", 300*time.Millisecond, "unmeasured warm-up of each run")
	flag.DurationVar(&cfg.dur, "d", 2*time.Second, "measured time of each run")
	flag.IntVar(&cfg.kills, "kills", 3, "leader kills per system (the report gives each and the median)")
	flag.IntVar(&cfg.failClients, "failover-clients", 16, "clients during the leader kills")
	flag.DurationVar(&cfg.failDur, "failover-d", 6*time.Second, "measured time of a leader-kill run")
	flag.DurationVar(&cfg.killAfter, "kill-after", 2*time.Second, "when the leader is killed, into the measured time")
	flag.IntVar(&cfg.etcdHeartbeatMs, "etcd-heartbeat-ms", 0, "etcd --heartbeat-interval (0: etcd's default, 100)")
	flag.IntVar(&cfg.etcdElectionMs, "etcd-election-ms", 0, "etcd --election-timeout (0: etcd's default, 1000)")
	flag.Int64Var(&cfg.reserveSize, "reserve-size", 1000, "IDs per reservation on the durable path (store, etcd, and the leaf_alloc row's step)")
	flag.Int64Var(&cfg.idStep, "id-step", 100000, "initial segment size of the ID path's tag (allocsvr and Leaf; both grow it up to 1,000,000)")
	flag.Parse()
	cfg.noSweeps, cfg.durableOnly = !*sweeps, *durOnly
	outSet := false
	flag.Visit(func(f *flag.Flag) { outSet = outSet || f.Name == "out" })
	if *smoke {
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range smokeDefaults {
			if !set[name] {
				_ = flag.Set(name, fmt.Sprint(v))
			}
		}
		cfg.smoke = true
		if !outSet {
			dir, err := os.MkdirTemp("", "benchpeers-smoke-out-")
			if err != nil {
				fmt.Fprintln(os.Stderr, "benchpeers:", err)
				os.Exit(1)
			}
			cfg.outDir = dir
		}
	} else if *short {
		// -short sets what was not given explicitly.
		set := map[string]bool{}
		flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
		for name, v := range map[string]any{"clients": "1,16,64", "rounds": 1, "d": 700 * time.Millisecond, "warmup": 200 * time.Millisecond,
			"failover-d": 4 * time.Second, "kill-after": 1500 * time.Millisecond, "kills": 1} {
			if !set[name] {
				_ = flag.Set(name, fmt.Sprint(v))
			}
		}
		cfg.short = true
	}
	for _, s := range strings.Split(clients, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "benchpeers: bad -clients %q\n", clients)
			os.Exit(2)
		}
		cfg.clients = append(cfg.clients, n)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	rep, err := run(ctx, log, cfg)
	stop()
	killAll()
	if err != nil {
		log.Error("benchpeers", "err", err)
		if cfg.smoke {
			fmt.Printf("bench-peers smoke: FAILED: %v\n(output, if any, in %s)\n", err, cfg.outDir)
		}
		os.Exit(1)
	}
	if cfg.smoke {
		os.Exit(smokeVerdict(rep, cfg.outDir, !outSet))
	}
}

func run(ctx context.Context, log *slog.Logger, cfg config) (rep *report, err error) {
	began := time.Now()
	rep = &report{cfg: cfg, began: began, machine: machineInfo(), loadStart: loadAvg()}
	if cfg.workDir == "" {
		if cfg.workDir, err = os.MkdirTemp("", "benchpeers-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(cfg.workDir)
	}
	bin := func(n string) string { return filepath.Join(cfg.binDir, n) }
	for _, n := range []string{"storesvr", "allocsvr", "loadgen", "peerload", "leafsvr"} {
		if !fileExists(bin(n)) {
			return nil, fmt.Errorf("%s missing: build with make bench-peers", bin(n))
		}
	}

	// seqsvr: 3 stores (Raft, raft-boltdb, fsync per commit) and one allocsvr.
	log.Info("starting seqsvr (3 storesvr, 1 allocsvr)")
	c, err := launch.Start(ctx, launch.Options{BinDir: cfg.binDir, Dir: filepath.Join(cfg.workDir, "seqsvr"), Stores: 3, Allocs: 1,
		AllocArgs: []string{"--max-step", "1000000"}, Logf: func(string, ...any) {}})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	for tag, step := range map[string]int64{"reserve": cfg.reserveSize, "bench": cfg.idStep, "kill": cfg.idStep} {
		if err := c.CreateTag(ctx, &seqsvrv1.CreateTagRequest{Tag: tag, Step: step}); err != nil {
			return nil, err
		}
	}
	leader, err := c.Leader(ctx)
	if err != nil {
		return nil, err
	}
	rep.versions = append(rep.versions, kv{"seqsvr", "this commit (" + gitHead() + "), hashicorp/raft v1.7.3, raft-boltdb/v2 v2.3.1"})
	rep.settings = append(rep.settings, kv{"seqsvr", fmt.Sprintf("3 storesvr on loopback, Raft election timeout %v, heartbeat %v; raft-boltdb fsyncs the log on every commit (NoSync off). 1 allocsvr, --max-step 1000000.", raftconf.DefaultElectionTimeout, raftconf.DefaultHeartbeatTimeout)})
	storeURLs := strings.Join(c.StoreURLs(), ",")
	allocURL := c.Allocs[0].URL()

	// etcd: 3 members, fsync of the WAL on every commit (its default).
	var ec *etcdCluster
	if fileExists(cfg.etcdBin) {
		log.Info("starting etcd (3 members)")
		if ec, err = startEtcd(ctx, cfg.etcdBin, filepath.Join(cfg.workDir, "etcd"), cfg.etcdHeartbeatMs, cfg.etcdElectionMs); err != nil {
			rep.skipped = append(rep.skipped, "etcd: "+err.Error())
			ec = nil
		} else {
			defer ec.cli.Close()
			hb, el := cmpOr(cfg.etcdHeartbeatMs, 100), cmpOr(cfg.etcdElectionMs, 1000)
			rep.versions = append(rep.versions, kv{"etcd", version(cfg.etcdBin, "--version") + " (built from the pinned go.etcd.io/etcd/server/v3 in bench/peers/go.mod); client go.etcd.io/etcd/client/v3 v3.6.16"})
			rep.settings = append(rep.settings, kv{"etcd", fmt.Sprintf("3 members on loopback, --heartbeat-interval %d, --election-timeout %d (ms); the WAL is fsynced on every commit (etcd's default, --unsafe-no-fsync off). A reservation is one transaction: if the counter key's mod revision is the one this client last saw, put the value raised by %d, else read it (and try again).", hb, el, cfg.reserveSize)})
			rep.etcdElectionMs = el
		}
	} else {
		rep.skipped = append(rep.skipped, fmt.Sprintf("etcd: no binary at %s (make bench-peers builds it)", cfg.etcdBin))
	}

	// MariaDB (one server) and leafsvr over it.
	var db *mariaDB
	leafURL := ""
	if db, err = startMariaDB(ctx, filepath.Join(cfg.workDir, "mariadb")); err != nil {
		rep.skipped = append(rep.skipped, "MariaDB: "+err.Error())
		if errors.Is(err, errNotInstalled) {
			rep.notInstalled = append(rep.notInstalled, rep.skipped[len(rep.skipped)-1])
		}
		db = nil
	} else {
		for tag, step := range map[string]int64{"reserve": cfg.reserveSize, "bench": cfg.idStep} {
			if err := db.addTag(ctx, tag, step); err != nil {
				return nil, err
			}
		}
		rep.versions = append(rep.versions, kv{"MariaDB", db.version + " (Debian package), driver github.com/go-sql-driver/mysql v1.9.3"})
		rep.settings = append(rep.settings, kv{"MariaDB", fmt.Sprintf("ONE server (no replica; Leaf runs on one MySQL primary too), read back from the server: innodb_flush_log_at_trx_commit=%s, sync_binlog=%s, log_bin=%s (binlog_format %s), innodb_doublewrite=%s, innodb_flush_method=%s.",
			db.settings["innodb_flush_log_at_trx_commit"], db.settings["sync_binlog"], db.settings["log_bin"], db.settings["binlog_format"], db.settings["innodb_doublewrite"], db.settings["innodb_flush_method"])})
		if leafURL, err = startLeafsvr(ctx, bin("leafsvr"), cfg.workDir, db.dsn); err != nil {
			rep.skipped = append(rep.skipped, "leafsvr: "+err.Error())
			leafURL = ""
		}
	}
	redisAddr, redisVer, err := startRedis(ctx, filepath.Join(cfg.workDir))
	if err != nil {
		rep.skipped = append(rep.skipped, "Redis: "+err.Error())
		if errors.Is(err, errNotInstalled) {
			rep.notInstalled = append(rep.notInstalled, rep.skipped[len(rep.skipped)-1])
		}
		redisAddr = ""
	} else {
		rep.versions = append(rep.versions, kv{"Redis", redisVer})
		rep.settings = append(rep.settings, kv{"Redis", "one server, no persistence (--save \"\" --appendonly no): an in-memory reference for the ID path, as bench/ uses it."})
	}
	for _, s := range rep.skipped {
		log.Warn("peer left out", "why", s)
	}

	// The durable write path.
	size := strconv.FormatInt(cfg.reserveSize, 10)
	durable := []target{
		{"seqsvr-go", "seqsvr ReserveSegment (Go store client)", bin("peerload"), []string{"-target", "store-go", "-urls", storeURLs, "-tag", "reserve", "-count", size}},
		{"seqsvr-raw", "seqsvr ReserveSegment (raw HTTP/1.1 to the leader)", bin("loadgen"), []string{"-target", "store-raw", "-url", leader.URL(), "-tag", "reserve", "-count", size}},
	}
	if ec != nil {
		durable = append(durable, target{"etcd", "etcd txn compare-and-raise", bin("peerload"), []string{"-target", "etcd-txn", "-endpoints", strings.Join(ec.endpoints(), ","), "-count", size}})
	}
	if db != nil {
		durable = append(durable, target{"mariadb", "MariaDB Leaf UPDATE+SELECT txn", bin("peerload"), []string{"-target", "mysql-leaf", "-dsn", db.dsn, "-tag", "reserve"}})
	}
	log.Info("durable write path", "targets", len(durable), "clients", cfg.clients, "rounds", cfg.rounds)
	if !cfg.noSweeps {
		rep.durable = sweep(ctx, log, durable, cfg.clients, cfg.rounds, cfg.warm, cfg.dur, &rep.failures)
	}

	if cfg.durableOnly {
		rep.loadEnd, rep.elapsed = loadAvg(), time.Since(began)
		return rep, rep.write()
	}

	// The ID path.
	ids := []target{
		{"alloc-1", "allocsvr NextIDs count=1", bin("loadgen"), []string{"-target", "alloc-raw", "-url", allocURL, "-tag", "bench", "-count", "1"}},
		{"alloc-leafapi", "allocsvr Leaf API GET", bin("loadgen"), []string{"-target", "leaf-raw", "-url", allocURL, "-tag", "bench"}},
	}
	if leafURL != "" {
		ids = append(ids, target{"leaf-mariadb", "Leaf-segment over MariaDB, GET", bin("loadgen"), []string{"-target", "leaf-raw", "-url", leafURL, "-tag", "bench"}})
	}
	if redisAddr != "" {
		ids = append(ids, target{"redis-incr", "Redis INCR", bin("loadgen"), []string{"-target", "redis", "-addr", redisAddr, "-count", "1"}})
	}
	ids = append(ids, target{"alloc-1000", "allocsvr NextIDs count=1000", bin("loadgen"), []string{"-target", "alloc-raw", "-url", allocURL, "-tag", "bench", "-count", "1000"}})
	if redisAddr != "" {
		ids = append(ids, target{"redis-incrby", "Redis INCRBY 1000", bin("loadgen"), []string{"-target", "redis", "-addr", redisAddr, "-count", "1000"}})
	}
	// Warm both allocators' buffers (first segment loads) outside the measurement.
	for _, t := range ids {
		_, _ = runOnce(ctx, t, 4, 0, 300*time.Millisecond)
	}
	log.Info("ID path", "targets", len(ids), "clients", cfg.clients, "rounds", cfg.rounds)
	if !cfg.noSweeps {
		rep.ids = sweep(ctx, log, ids, cfg.clients, cfg.rounds, cfg.warm, cfg.dur, &rep.failures)
	}

	// Leader kills under load.
	if ctx.Err() == nil {
		allocT := target{"alloc-kill", "allocsvr NextIDs count=1", bin("loadgen"), []string{"-target", "alloc-raw", "-url", allocURL, "-tag", "kill", "-count", "1"}}
		groups := []failoverGroup{{label: "seqsvr ReserveSegment through a store leader kill"}, {label: "allocsvr NextIDs through a store leader kill"}}
		kills := []func() failoverRun{
			func() failoverRun { return killStoreLeader(ctx, log, c, cfg, durable[0], groups[0].label) },
			func() failoverRun { return killStoreLeader(ctx, log, c, cfg, allocT, groups[1].label) },
		}
		for _, t := range durable {
			if t.key == "etcd" {
				groups = append(groups, failoverGroup{label: "etcd txn through an etcd leader kill"})
				kills = append(kills, func() failoverRun { return killEtcdLeader(ctx, log, ec, cfg, t) })
			}
		}
		// The kills alternate over the systems too.
		for range cfg.kills {
			for i, k := range kills {
				if ctx.Err() == nil {
					groups[i].runs = append(groups[i].runs, k())
				}
			}
		}
		rep.failovers = groups
	}

	if cfg.peerbenchDir != "" && ctx.Err() == nil {
		log.Info("snowflake peers", "dir", cfg.peerbenchDir)
		rep.snowflake, rep.snowflakeErr = runSnowflake(ctx, cfg.peerbenchDir, cfg.snowflakeTime())
	}
	if err := ctx.Err(); err != nil {
		return nil, errors.New("interrupted: no report written")
	}
	rep.loadEnd, rep.elapsed = loadAvg(), time.Since(began)
	return rep, rep.write()
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func killStoreLeader(ctx context.Context, log *slog.Logger, c *launch.Cluster, cfg config, t target, label string) failoverRun {
	fr := failoverRun{label: label, electMs: int(raftconf.DefaultElectionTimeout.Milliseconds())}
	var victim *launch.Proc
	res, at, killed, err := throughKill(ctx, t, cfg.failClients, cfg.warm, cfg.failDur, cfg.killAfter, func() (string, error) {
		l, err := c.Leader(ctx)
		if err != nil {
			return "", err
		}
		victim = l
		return l.Name, l.Kill()
	})
	fr.res, fr.killAt, fr.killed = res, at, killed
	if err != nil {
		fr.failed = firstLine(err.Error())
	}
	if victim != nil {
		rctx, cancel := context.WithTimeout(ctx, time.Minute)
		if err := victim.Start(rctx); err == nil {
			err = c.WaitReady(rctx, victim)
			if err != nil {
				log.Warn("restarted store not ready", "err", err)
			}
		}
		cancel()
	}
	log.Info("leader kill", "run", label, "killed", killed, "stall-ms", fr.stallUs()/1000, "max-gap-ms", res.MaxGapUs/1000, "errors", res.Errors, "err", fr.failed)
	return fr
}

func killEtcdLeader(ctx context.Context, log *slog.Logger, ec *etcdCluster, cfg config, t target) failoverRun {
	fr := failoverRun{label: "etcd txn through an etcd leader kill", electMs: cfg.etcdElectionMs}
	if fr.electMs == 0 {
		fr.electMs = 1000
	}
	var victim *etcdMember
	res, at, killed, err := throughKill(ctx, t, cfg.failClients, cfg.warm, cfg.failDur, cfg.killAfter, func() (string, error) {
		l, err := ec.leader(ctx)
		if err != nil {
			return "", err
		}
		victim = l
		l.p.kill()
		return l.name, nil
	})
	fr.res, fr.killAt, fr.killed = res, at, killed
	if err != nil {
		fr.failed = firstLine(err.Error())
	}
	if victim != nil {
		if err := ec.restart(ctx, victim); err != nil {
			log.Warn("restarted etcd member not ready", "err", err)
		}
	}
	log.Info("leader kill", "run", fr.label, "killed", killed, "stall-ms", fr.stallUs()/1000, "max-gap-ms", res.MaxGapUs/1000, "errors", res.Errors, "err", fr.failed)
	return fr
}

func raftElection() time.Duration { return raftconf.DefaultElectionTimeout }
