package main

import (
	"context"

	"github.com/seqsvr/seqsvr/storage"
)

// handover is the stop's first step: a leader hands leadership over
// (storage.Store.Handover) within --shutdown-grace, so a rolling restart
// costs no election. nil with --handover-on-stop=false.
func (cfg *config) handover(st *storage.Store) func() {
	if !cfg.HandoverOnStop {
		return nil
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
		defer cancel()
		st.Handover(ctx)
	}
}
