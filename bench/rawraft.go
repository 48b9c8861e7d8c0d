package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/seqsvr/seqsvr/internal/raftconf"
)

// RawRaft is the reference the store is measured against: three
// hashicorp/raft nodes in one process on loopback TCP, with the raft
// configuration, transport, raft-boltdb stores and snapshot store built by
// package raftconf exactly as the store builds its own (timeouts at their
// defaults, batching, snapshot cadence, transport pool, log cache), and an
// FSM that only counts. Whatever the store costs beyond this is seqsvr's
// own overhead.
type RawRaft struct {
	nodes []*raft.Raft
	close []func()
}

type countFSM struct{ n atomic.Uint64 }

func (f *countFSM) Apply(*raft.Log) any                 { return f.n.Add(1) }
func (f *countFSM) Snapshot() (raft.FSMSnapshot, error) { return countSnap{}, nil }
func (f *countFSM) Restore(r io.ReadCloser) error       { return r.Close() }

type countSnap struct{}

func (countSnap) Persist(s raft.SnapshotSink) error { return s.Close() }
func (countSnap) Release()                          {}

// StartRawRaft starts the reference cluster under dir and waits for a
// leader. tune, when not nil, runs on each raftconf.New configuration.
func StartRawRaft(dir string, tune func(*raft.Config)) (*RawRaft, error) {
	rr := &RawRaft{}
	var servers []raft.Server
	var transports []*raftconf.Transport
	for i := 0; i < 3; i++ {
		// Bind :0 in the transport itself: no window for another process
		// to take the port between picking and binding it.
		tr, err := raftconf.NewTransport("127.0.0.1:0", nil, hclog.NewNullLogger())
		if err != nil {
			rr.Close()
			return nil, err
		}
		transports = append(transports, tr)
		rr.close = append(rr.close, func() { _ = tr.Close() })
		servers = append(servers, raft.Server{ID: raft.ServerID(fmt.Sprint("raw", i)), Address: tr.LocalAddr()})
	}
	for i, tr := range transports {
		d := filepath.Join(dir, fmt.Sprint("raw", i))
		if err := os.MkdirAll(d, 0o755); err != nil {
			rr.Close()
			return nil, err
		}
		stores, err := raftconf.OpenStores(filepath.Join(d, "raft.db"))
		if err != nil {
			rr.Close()
			return nil, err
		}
		store := stores.Bolt
		rr.close = append(rr.close, func() { _ = store.Close() })
		snaps, err := raftconf.NewSnapshots(d, hclog.NewNullLogger())
		if err != nil {
			rr.Close()
			return nil, err
		}
		cfg, err := raftconf.New(servers[i].ID, raftconf.Timing{}, hclog.NewNullLogger())
		if err != nil {
			rr.Close()
			return nil, err
		}
		if tune != nil {
			tune(cfg)
		}
		r, err := raft.NewRaft(cfg, &countFSM{}, stores.Logs, store, snaps, tr)
		if err != nil {
			rr.Close()
			return nil, err
		}
		rr.nodes = append(rr.nodes, r)
		rr.close = append(rr.close, func() { _ = r.Shutdown().Error() })
	}
	if err := rr.nodes[0].BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		rr.Close()
		return nil, err
	}
	if _, err := rr.leader(10 * time.Second); err != nil {
		rr.Close()
		return nil, err
	}
	return rr, nil
}

func (rr *RawRaft) leader(wait time.Duration) (*raft.Raft, error) {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		for _, n := range rr.nodes {
			if n.State() == raft.Leader {
				return n, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil, fmt.Errorf("raw raft: no leader within %s", wait)
}

// ApplyLoop runs conc goroutines applying 16-byte entries on the leader for
// dur and returns applies per second.
func (rr *RawRaft) ApplyLoop(ctx context.Context, conc int, dur time.Duration) (float64, error) {
	ld, err := rr.leader(5 * time.Second)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, dur)
	defer cancel()
	var (
		wg       sync.WaitGroup
		n        atomic.Int64
		firstErr atomic.Value
	)
	entry := make([]byte, 16)
	start := time.Now()
	for i := 0; i < conc; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := ld.Apply(entry, 5*time.Second).Error(); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return 0, err
	}
	return float64(n.Load()) / time.Since(start).Seconds(), nil
}

// Close shuts every node down, undoing StartRawRaft last step first, so
// each raft stops before its store closes.
func (rr *RawRaft) Close() {
	for i := len(rr.close) - 1; i >= 0; i-- {
		rr.close[i]()
	}
	rr.close = nil
}
