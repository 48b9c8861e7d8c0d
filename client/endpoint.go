package client

import (
	"sync"
	"time"

	"github.com/seqsvr/seqsvr/gen/seqsvr/v1/seqsvrv1connect"
)

// endpoint is one allocsvr base URL with its stubs and health. An
// endpoint that failed is ejected for 100 ms, doubling with each failure
// in a row up to the client's limit; the first success clears it.
type endpoint struct {
	url   string
	alloc seqsvrv1connect.AllocServiceClient
	seq   seqsvrv1connect.SeqServiceClient

	mu    sync.Mutex
	fails int
	until time.Time // ejected until then
}

const firstEject = 100 * time.Millisecond

// ejected reports whether the endpoint sits out at now, and until when.
func (e *endpoint) ejected(now time.Time) (bool, time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return now.Before(e.until), e.until
}

// fail ejects the endpoint and returns for how long.
func (e *endpoint) fail(now time.Time, limit time.Duration) time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fails++
	d := firstEject
	for i := 1; i < e.fails && d < limit; i++ {
		d *= 2
	}
	d = min(d, limit)
	e.until = now.Add(d)
	return d
}

// ok clears the failure record; it reports whether the endpoint had been
// failing (a recovery worth logging).
func (e *endpoint) ok() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	was := e.fails > 0
	e.fails, e.until = 0, time.Time{}
	return was
}
