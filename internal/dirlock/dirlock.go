// Package dirlock holds an exclusive lock on a file in a data dir for the
// life of the process. The kernel drops the lock when its holder dies,
// however it dies, so a process that takes it knows no earlier process on
// that dir still runs: the snowflake cache relies on it so two processes
// never start from one cache, the per-key instance ID (alloc/seq) so a
// restart may take over its dead predecessor's lease at once.
package dirlock

import "errors"

// ErrHeld means another process (or another Lock in this one) holds the
// lock.
var ErrHeld = errors.New("in use by another process")
