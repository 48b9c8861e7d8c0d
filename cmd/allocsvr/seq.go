package main

import (
	"context"
	"fmt"
	"net"

	"github.com/seqsvr/seqsvr/alloc"
	"github.com/seqsvr/seqsvr/alloc/seq"
	"github.com/seqsvr/seqsvr/alloc/storeclient"
	"github.com/seqsvr/seqsvr/cmd/internal/serve"
	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
	"github.com/seqsvr/seqsvr/internal/clock"
)

// openSeq starts per-key sequences: the node heartbeats its lease until
// ctx ends, and its SeqService is served beside AllocService. The node's
// Close (stop serving, then a leaving heartbeat) runs once the server has
// drained.
func openSeq(ctx context.Context, cfg *config, env serve.Env, store *storeclient.Client, svc *alloc.Service) (*seq.Node, serve.Service, error) {
	url := cfg.AdvertiseURL
	if url == "" {
		url = "http://" + env.Addr
		if host, _, err := net.SplitHostPort(env.Addr); err == nil && (host == "" || net.ParseIP(host).IsUnspecified()) {
			env.Logger.Warn("other allocsvrs cannot forward per-key calls to a wildcard address; set --advertise-url", "url", url)
		}
	}
	n, err := seq.New(store, seq.Config{
		NodeID:            cfg.NodeID,
		URL:               url,
		HeartbeatInterval: cfg.SeqHeartbeatInterval,
		FenceMargin:       cfg.SeqFenceMargin,
		Clock:             clock.System(),
		Logger:            env.Logger,
		Registerer:        env.Registry,
	})
	if err != nil {
		return nil, serve.Service{}, fmt.Errorf("--seq: %w", err)
	}
	n.Start(ctx)
	svc.SetSeq(n)
	path, h := seqsvrv1connect.NewSeqServiceHandler(n.Handler(), serve.ConnectOptions(cfg.MaxBodyBytes, env.Logger)...)
	return n, serve.Service{Name: seqsvrv1connect.SeqServiceName, Path: path, Handler: h}, nil
}
