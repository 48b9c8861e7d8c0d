package main

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"github.com/seqsvr/seqsvr/alloc"
	"github.com/seqsvr/seqsvr/alloc/storeclient"
	seqsvrv1 "github.com/seqsvr/seqsvr/gen/seqsvr/v1"
)

// exposeFence shows which store cluster the allocsvr follows and which
// store members it refuses, in Status and as metrics: a refused member is
// an old cluster's (or a store rebuilt empty) that came back and must be
// kept down; the alert on seqsvr_alloc_store_fenced_members says so.
func exposeFence(reg prometheus.Registerer, store *storeclient.Client, svc *alloc.Service) {
	svc.SetStoreView(func(out *seqsvrv1.StatusResponse) {
		f := store.Followed()
		out.ClusterId, out.ClusterGeneration = f.ClusterID, f.Generation
		for _, s := range store.FencedStores() {
			out.FencedStores = append(out.FencedStores, &seqsvrv1.FencedStore{Url: s.URL, ClusterId: s.ClusterID, Generation: s.Generation})
		}
	})
	p := promauto.With(reg)
	p.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seqsvr_alloc_store_fenced_members",
		Help: "Store members whose last answer named another cluster of a generation not above the one this allocsvr follows (old members back after a restore, or a store rebuilt empty): never used; keep them down.",
	}, func() float64 { return float64(len(store.FencedStores())) })
	p.NewCounterFunc(prometheus.CounterOpts{
		Name: "seqsvr_alloc_store_fenced_answers_total",
		Help: "Store answers refused because they named another cluster of a generation not above the one this allocsvr follows.",
	}, func() float64 { return float64(store.FencedAnswers()) })
	p.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "seqsvr_alloc_store_cluster_generation",
		Help: "The generation of the store cluster this allocsvr follows (0: bootstrapped fresh; a restore or recovery raises it).",
	}, func() float64 { return float64(store.Followed().Generation) })
}
