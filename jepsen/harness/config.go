// Package harness runs one fault-injection test against real storesvr and
// allocsvr processes: it builds the binaries with -tags faults, starts a
// cluster (in network namespaces when root), drives the workloads while
// the nemesis injects faults on a seeded schedule, heals and quiesces the
// cluster, resolves operations whose outcome was unknown, reads the final
// state, runs every checker and writes a results folder.
//
// Unknown outcomes: a reservation that failed or timed out is re-issued
// with its request_id after the run (many at a time); one that failed to
// connect (a dial error in this process) was never sent and is not. A
// per-key call (NextSeq, NextSeqs, CurrentSeqs) that failed stays
// unknown: nothing can re-issue it, and the per-key checkers count only
// answered calls. The final state is each member's own applied state
// (GetTag local=true), read after the allocsvrs are stopped, at a point
// where every member reports the same applied index before and after the
// reads; the per-key final state is one CurrentSeqs of every hot key,
// made after the workers stopped and recorded with the other calls.
//
// A run passes only if every checker passes; a checker that cannot decide
// fails, and so does a run in which some kind of operation never
// succeeded.
//
// The upgrade scenario (upgrade.go) starts the cluster on the base
// release's binaries, built from its commit (upgradebase.go), and
// replaces them one process at a time instead of injecting faults.
//
// Everything the checkers read is saved before they run (history.jsonl,
// final.json), so Recheck can run them again on a results folder, through
// the same Check.
package harness

import (
	"cmp"
	"time"
)

// Config describes one run.
type Config struct {
	Name     string
	Seed     int64
	Duration time.Duration
	// OutDir receives the results folder (history.jsonl, final.json,
	// nemesis.log, nemesis.jsonl, logs/, summary.txt, summary.json,
	// linearizability.html on failure).
	OutDir string
	// BinDir caches the faults build; shared by runs of one process.
	BinDir string

	Stores, Allocs int
	// Faults are nemesis.Catalogue names; empty runs without faults.
	Faults       []string
	GapLo, GapHi time.Duration
	// Copies runs each nemesis lane this many times concurrently, so
	// faults overlap (default 1).
	Copies int
	// Partitions enables network namespaces (needs root; otherwise the
	// partition faults are skipped and reported so).
	Partitions bool
	// Bugs planted through SEQSVR_FAULTS_BUGS in every process.
	Bugs []string
	// Extra flags for the servers.
	StoreArgs, AllocArgs []string
	// Plain runs the cluster without auth and TLS; the default is the
	// secure mode (launch.Security), the way it is meant to be run.
	Plain bool
	// LeaseTTL is the stores' --worker-lease-ttl.
	LeaseTTL time.Duration
	// Ordinal runs the stores in the StatefulSet mode under this
	// --ordinal-domain (launch.Options.Ordinal): each derives its node
	// ID, addresses and --peers from its pod name, and a restart (the
	// lost-disk fault's) passes the same flags again.
	Ordinal string
	// DataDirTmpfs puts every data dir on a tmpfs of this many bytes
	// (launch.Options.DataDirTmpfs), for the disk-full faults; 0: none.
	DataDirTmpfs int64

	// TagWorkers create, update, delete, reserve on and read the
	// LifeTags at a modest rate.
	StoreWorkers, AllocWorkers, TagWorkers int
	// LinTags are the tags only the store workers touch (porcupine);
	// AllocTags are served by the allocsvrs; LifeTags are created and
	// deleted over and over (porcupine too). None of the life tags is in
	// the final state: it may be absent at the end.
	LinTags, AllocTags, LifeTags int
	// SoloShare is the percentage of NextIDs calls an alloc worker makes
	// on the solo tag of the allocsvr it calls (checker.SoloPrefix: each
	// original allocsvr has one only it serves); default 25.
	SoloShare int
	// MinCount is the smallest count an alloc worker asks for (up to
	// 20; default 1). Large counts leave the IDs that did not cover a
	// request carried in the allocsvr while its store is away.
	MinCount int
	// SeqWorkers call NextSeq, NextSeqs and CurrentSeqs on the per-key
	// space (see seqload.go) through random allocsvrs; 0 runs no per-key
	// workload, creates no space and leaves the per-key flags at their
	// defaults.
	SeqWorkers int
	// SeqHotKeys is how many keys the per-key workers use, spread over
	// every section; SeqStep is the space's step (how far one raise moves
	// a section's max_seq).
	SeqHotKeys int
	SeqStep    int64
	// SeqLeaseTTL is the stores' --seq-lease-ttl, SeqHeartbeat the
	// allocsvrs' --seq-heartbeat-interval and SeqFenceMargin their
	// --seq-fence-margin (they fence that long before an unrenewed lease
	// ends; default seqFenceMargin).
	SeqLeaseTTL, SeqHeartbeat, SeqFenceMargin time.Duration

	// Upgrade runs the upgrade scenario (upgrade.go) instead of the
	// nemesis: the cluster starts on the base release's binaries, built
	// (once per commit) into BaseCache, default <module>/jepsen/results/bin.
	Upgrade   bool
	BaseCache string
	// Paths are the serving paths (history.Paths; "leaf" for both Leaf
	// paths) that carry load besides connect-go over HTTP/2, which always
	// does; empty: all of them (see paths.go for the shares).
	Paths []string

	// OpTimeout bounds one client call.
	OpTimeout time.Duration

	Logf func(string, ...any)
}

func (c Config) withDefaults() Config {
	c.Name = cmp.Or(c.Name, "run")
	c.Duration = cmp.Or(c.Duration, 30*time.Second)
	c.Stores = cmp.Or(c.Stores, 3)
	c.Allocs = cmp.Or(c.Allocs, 2)
	if c.GapLo == 0 && c.GapHi == 0 {
		c.GapLo, c.GapHi = 100*time.Millisecond, 600*time.Millisecond
	}
	c.LeaseTTL = cmp.Or(c.LeaseTTL, 3*time.Second)
	c.StoreWorkers = cmp.Or(c.StoreWorkers, 4)
	c.AllocWorkers = cmp.Or(c.AllocWorkers, 4)
	c.TagWorkers = cmp.Or(c.TagWorkers, 2)
	c.LinTags = cmp.Or(c.LinTags, 3)
	c.AllocTags = cmp.Or(c.AllocTags, 2)
	c.LifeTags = cmp.Or(c.LifeTags, 2)
	c.SoloShare = cmp.Or(c.SoloShare, 25)
	c.MinCount = min(cmp.Or(c.MinCount, 1), 20)
	c.SeqHotKeys = cmp.Or(c.SeqHotKeys, 30)
	c.SeqStep = cmp.Or(c.SeqStep, 50)
	c.SeqLeaseTTL = cmp.Or(c.SeqLeaseTTL, 2*time.Second)
	c.SeqHeartbeat = cmp.Or(c.SeqHeartbeat, 200*time.Millisecond)
	c.SeqFenceMargin = cmp.Or(c.SeqFenceMargin, seqFenceMargin)
	c.OpTimeout = cmp.Or(c.OpTimeout, time.Second)
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	return c
}
