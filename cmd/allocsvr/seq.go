package main

import (
	"context"
	"fmt"
	"net"

	"github.com/seqsvr/seqsvr/alloc"
	"github.com/seqsvr/seqsvr/alloc/seq"
	"github.com/seqsvr/seqsvr/alloc/storeclient"
	"github.com/seqsvr/seqsvr/internal/clock"
	"github.com/seqsvr/seqsvr/internal/serve"
)

// openSeq starts per-key sequences: the node heartbeats its lease until
// ctx ends, and its SeqService is served beside AllocService. The caller
// runs the node's Close (stop serving, then a leaving heartbeat) on
// SIGTERM before the server drains, and release (the data-dir lock) after;
// its Routes are SeqService's, added to the process's table. With
// --data-dir the node keeps its instance ID across restarts
// (seq.LoadInstance), so a restart after a crash serves at once.
func openSeq(ctx context.Context, cfg *config, env serve.Env, store *storeclient.Client, svc *alloc.Service, peers peerAccess) (*seq.Node, func(), error) {
	url := cfg.AdvertiseURL
	if url == "" {
		url = env.Scheme + "://" + env.Addr
		if host, _, err := net.SplitHostPort(env.Addr); err == nil && (host == "" || net.ParseIP(host).IsUnspecified()) {
			env.Logger.Warn("other allocsvrs cannot forward per-key calls to a wildcard address; set --advertise-url", "url", url)
		}
	}
	release := func() {}
	var instance string
	if cfg.DataDir != "" {
		var err error
		if instance, release, err = seq.LoadInstance(cfg.DataDir, cfg.NodeID); err != nil {
			return nil, nil, fmt.Errorf("--seq: %w", err)
		}
	}
	n, err := seq.New(store, seq.Config{
		InstanceID:        instance,
		NodeID:            cfg.NodeID,
		URL:               url,
		HeartbeatInterval: cfg.SeqHeartbeatInterval,
		FenceMargin:       cfg.SeqFenceMargin,
		Clock:             clock.System(),
		Logger:            env.Logger,
		Registerer:        env.Registry,
		HTTPClient:        peers.httpClient(),
		ClientOptions:     peers.clientOptions(),
	})
	if err != nil {
		release()
		return nil, nil, fmt.Errorf("--seq: %w", err)
	}
	store.OnClusterChange(func(was, now string) {
		n.Takeover(fmt.Sprintf("the store's cluster ID changed from %s to %s (restored or recovered)", was, now))
	})
	n.Start(ctx)
	svc.SetSeq(n)
	return n, release, nil
}
