package launch

import (
	"context"
	"time"
)

// Sleep waits d, or less if ctx ends first, in which case it returns
// ctx's error: the pause between two polls of a process or a cluster.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
