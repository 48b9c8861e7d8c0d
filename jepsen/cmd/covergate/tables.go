package main

import (
	"github.com/seqsvr/seqsvr/alloc"
	"github.com/seqsvr/seqsvr/alloc/seq"
	"github.com/seqsvr/seqsvr/internal/routes"
	"github.com/seqsvr/seqsvr/storage"
)

// tables is every routes table the binaries serve: the store's
// StoreService, the allocsvr's AllocService and Leaf API, and SeqService.
// Each is built on a nil component: a Routes method only binds handlers,
// it calls none, so it gives the declarations (roles, serving paths)
// without a store or an allocator behind them.
func tables() routes.Table {
	var (
		st  *storage.Store
		svc *alloc.Service
		n   *seq.Node
	)
	return st.Routes().Add(svc.Routes()).Add(n.Routes())
}
