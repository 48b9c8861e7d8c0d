package nemesis

import (
	"context"
	"sync"
	"time"

	"github.com/seqsvr/seqsvr/internal/launch"
)

// probeSnowflake calls p for snowflake IDs without pause (two calls in
// flight, each recorded in the history) until the returned stop is
// called. An aimed fault probes both holders of a worker ID while its
// margin is at stake, so the checkers see what each answered there
// whatever the random workload happens to send, which on a loaded
// machine can fall to a few calls a second.
func (e *Env) probeSnowflake(ctx context.Context, p *launch.Proc) (stop func()) {
	if e.Snowflake == nil || p == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if op := e.Snowflake(ctx, p); op == nil || !op.OK {
					sleep(ctx, 5*time.Millisecond)
				}
			}
		}()
	}
	return func() {
		cancel()
		wg.Wait()
	}
}
