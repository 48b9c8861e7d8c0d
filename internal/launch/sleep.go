package launch

import (
	"context"
	"time"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// Sleep waits d, or less if ctx ends first, in which case it returns
// ctx's error: the pause between two polls of a process or a cluster.
func Sleep(ctx context.Context, d time.Duration) error { return errs.Sleep(ctx, d) }
