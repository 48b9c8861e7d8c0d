package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/seqsvr/seqsvr/internal/raftconf"
	"github.com/seqsvr/seqsvr/internal/serve"
	"github.com/seqsvr/seqsvr/internal/spec"
	"github.com/seqsvr/seqsvr/storage"
	"github.com/seqsvr/seqsvr/storage/fsm"
)

// config is everything storesvr reads from flags and SEQSVR_* variables.
// The tuning flags' defaults are storage.DefaultConfig's values; a zero
// value given explicitly also takes that default.
type config struct {
	NodeID, RaftAddr, HTTPAddr, DataDir string
	Peers, Join                         string
	Bootstrap                           bool
	MaxSegmentSize                      int64

	HeartbeatTimeout, ElectionTimeout, LeaderLeaseTimeout, CommitTimeout time.Duration
	SnapshotThreshold                                                    uint64
	SnapshotInterval                                                     time.Duration
	RequestRecordLimit                                                   int
	WorkerLeaseTTL, WorkerRetention                                      time.Duration
	SeqLeaseTTL                                                          time.Duration
	HandoverOnStop                                                       bool

	memberSecurity
	restoreFlags
	ordinal
	versionHold

	serve.Common
}

const summary = `storesvr is one member of seqsvr's Raft-replicated tag store.
Start every initial member with the same --peers list, in any order:
  storesvr --node-id s1 --raft-addr 127.0.0.1:7001 --http-addr 127.0.0.1:8081 --data-dir run/s1 \
    --peers s1=127.0.0.1:7001@127.0.0.1:8081,s2=127.0.0.1:7002@127.0.0.1:8082,s3=127.0.0.1:7003@127.0.0.1:8083
or add a member to a running cluster with --join HTTPADDR instead of --peers,
or start a one-member cluster with --bootstrap.`

func parseConfig(args []string, getenv func(string) string, out io.Writer) (*config, error) {
	c := &config{}
	fs := serve.NewFlagSet("storesvr", summary, out)
	fs.StringVar(&c.NodeID, "node-id", "", "this member's stable Raft server ID (required)")
	fs.StringVar(&c.RaftAddr, "raft-addr", "127.0.0.1:7001", "Raft transport address (TCP); other members dial it")
	fs.StringVar(&c.HTTPAddr, "http-addr", "127.0.0.1:8081", "Connect/gRPC/gRPC-web API, /healthz, /readyz, /metrics")
	fs.StringVar(&c.DataDir, "data-dir", "", "Raft log, stable store and snapshots (required)")
	fs.StringVar(&c.Peers, "peers", "", "initial members ID=RAFTADDR@HTTPADDR,...; the same list on every initial member; ignored once DATA-DIR holds state")
	fs.StringVar(&c.Join, "join", "", "join an existing cluster through any member's HTTPADDR (instead of --peers)")
	fs.BoolVar(&c.Bootstrap, "bootstrap", false, "with neither --peers nor --join, bootstrap a one-member cluster (without it, such a start with an empty DATA-DIR is an error)")
	// Every tuning default comes from storage.DefaultConfig, so --help
	// shows the values in force and no number is written twice.
	d := storage.DefaultConfig()
	fs.Int64Var(&c.MaxSegmentSize, "max-segment-size", d.MaxSegmentSize, "the largest ReserveSegment size and tag step; above it invalid_argument")
	fs.DurationVar(&c.HeartbeatTimeout, "heartbeat-timeout", d.HeartbeatTimeout, "Raft heartbeat timeout (tuned for a LAN)")
	fs.DurationVar(&c.ElectionTimeout, "election-timeout", d.ElectionTimeout, "Raft election timeout")
	fs.DurationVar(&c.LeaderLeaseTimeout, "leader-lease-timeout", d.LeaderLeaseTimeout,
		fmt.Sprintf("Raft leader lease timeout (0: --heartbeat-timeout, at most %v; never longer than --heartbeat-timeout)", raftconf.DefaultLeaderLeaseTimeout))
	fs.DurationVar(&c.CommitTimeout, "commit-timeout", d.CommitTimeout, "Raft commit timeout")
	fs.Uint64Var(&c.SnapshotThreshold, "snapshot-threshold", d.SnapshotThreshold, "log entries between snapshots")
	fs.DurationVar(&c.SnapshotInterval, "snapshot-interval", d.SnapshotInterval, "how often to check for a snapshot")
	fs.IntVar(&c.RequestRecordLimit, "request-record-limit", d.RequestRecordLimit, "request_ids remembered for idempotent retries")
	fs.DurationVar(&c.WorkerLeaseTTL, "worker-lease-ttl", d.WorkerLeaseTTL, "snowflake worker lease TTL")
	fs.DurationVar(&c.WorkerRetention, "worker-retention", d.WorkerRetention, "how long an expired worker ID is kept before it may be reclaimed")
	fs.DurationVar(&c.SeqLeaseTTL, "seq-lease-ttl", d.SeqLeaseTTL, "per-key sequence lease of an allocsvr: its sections move this long after its last heartbeat")
	fs.BoolVar(&c.HandoverOnStop, "handover-on-stop", true, "on SIGTERM or SIGINT, a leader hands leadership to the most caught-up voter before it stops\n(bounded by 3 election timeouts and --shutdown-grace); false: it just stops, and the others elect a leader")
	fs.StringVar(&c.Restore, "restore", "", "on an empty DATA-DIR: bootstrap a new one-member cluster (new cluster ID) from this backup file, every counter jumped; other members --join it")
	fs.DurationVar(&c.RestoreJump, "restore-jump", 0, "with --restore or --recover: jump each tag and section by its highest recorded rate times this (0: max(2 x the state's age, 1h))")
	fs.Int64Var(&c.MinJump, "restore-min-jump", 0, "with --restore or --recover: the smallest jump of any tag or section, in IDs (a floor of 2 x the largest segment applies anyway)")
	fs.BoolVar(&c.Recover, "recover", false, "on a member whose peers are gone for good: continue as a one-member cluster (new cluster ID) from its own data, every counter jumped; refused while another member answers")
	fs.Func("recover-lost", "with --recover: the other members (IDs, comma-separated) known to be gone for good; --recover refuses while\na member answers, and while one it cannot reach (refused, timed out, unresolved) is not named here", func(v string) error {
		c.RecoverLost = serve.SplitList(v)
		return nil
	})
	c.memberSecurity.register(fs)
	c.ordinal.register(fs)
	c.versionHold.register(fs)
	c.Common.Register(fs)
	if err := serve.Parse(fs, args, getenv); err != nil {
		return nil, err
	}
	errs := c.ordinal.apply(c) // first: it fills --node-id and --peers or --join
	if c.ordinal.Domain != "" && (c.Restore != "" || c.Recover) {
		// The derived --peers or --join describe a normal start; a restore
		// or recovery starts this member alone (the others join it).
		c.Peers, c.Join = "", ""
	}
	if c.NodeID == "" {
		errs = append(errs, errors.New("--node-id is required"))
	}
	if c.DataDir == "" {
		errs = append(errs, errors.New("--data-dir is required"))
	}
	if c.MaxSegmentSize < 1 || c.MaxSegmentSize > fsm.MaxStepLimit {
		errs = append(errs, fmt.Errorf("--max-segment-size must be 1..%d (a backup's bound)", fsm.MaxStepLimit))
	}
	// A backup carries these, and a restore waits out the longest before
	// granting worker IDs and sections: the bound a restore checks a
	// backup's leases against (spec.MaxLeaseTTL) is the flags'.
	if c.WorkerLeaseTTL > spec.MaxLeaseTTL || c.SeqLeaseTTL > spec.MaxLeaseTTL {
		errs = append(errs, fmt.Errorf("--worker-lease-ttl and --seq-lease-ttl must be at most %s", spec.MaxLeaseTTL))
	}
	if c.Bootstrap && (c.Peers != "" || c.Join != "") {
		errs = append(errs, errors.New("--bootstrap starts a one-member cluster: it goes without --peers and --join"))
	}
	if c.Restore != "" && (c.Recover || c.Peers != "" || c.Join != "" || c.Bootstrap) {
		errs = append(errs, errors.New("--restore starts a new one-member cluster: it goes without --recover, --peers, --join and --bootstrap"))
	}
	if c.Recover && (c.Peers != "" || c.Join != "" || c.Bootstrap) {
		errs = append(errs, errors.New("--recover continues this member's own cluster alone: it goes without --peers, --join and --bootstrap"))
	}
	if len(c.RecoverLost) > 0 && !c.Recover {
		errs = append(errs, errors.New("--recover-lost goes with --recover"))
	}
	if c.RestoreJump < 0 || c.MinJump < 0 {
		errs = append(errs, errors.New("--restore-jump and --restore-min-jump must not be negative"))
	}
	if c.Peers != "" && c.Join != "" {
		errs = append(errs, errors.New("--peers and --join are exclusive: --peers bootstraps a new cluster, --join adds to a running one"))
	}
	if c.Security.AuthFile != "" && c.JoinTokenFile == "" {
		// Members call each other's API: MemberProbe and AddMember when a
		// member starts without state, the leader's promotion and version
		// polls. Without a token every such call is refused, and a member
		// that lost its disk would wait for ever.
		errs = append(errs, errors.New("--auth-file needs --join-token-file (a token with role admin): members present it to each other when one starts, rejoins or is promoted"))
	}
	errs = append(errs, c.Common.Check()...)
	errs = append(errs, c.memberSecurity.check()...)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return c, nil
}
