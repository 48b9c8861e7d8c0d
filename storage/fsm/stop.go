package fsm

import (
	"fmt"

	"github.com/seqsvr/seqsvr/internal/errs"
)

// Option configures a Machine (New).
type Option func(*Machine)

// OnFatal sets what the machine calls, once, when it meets a committed
// entry it can neither apply nor skip: one that does not decode, or an
// unknown command (ErrUnknownCommand, naming its case or field number,
// this binary's feature level and the cluster version). fn is meant to
// stop the process: the store logs the error and exits non-zero, and on
// restart meets the entry again, until it runs a release that knows it.
// If fn returns, the machine stays stopped: every later Apply changes
// nothing, and Snapshot and Restore refuse, so no snapshot can ever cover
// the entry it did not apply. Without OnFatal the machine panics with
// the error.
func OnFatal(fn func(error)) Option {
	return func(f *Machine) { f.onFatal = fn }
}

// stop stops the machine on err and tells OnFatal (the first time
// only; without OnFatal it panics every time); it changes no state.
func (f *Machine) stop(err error) Result {
	f.mu.Lock()
	first := f.stopped == nil
	if first {
		f.stopped = err
	}
	stopped, fn := f.stopped, f.onFatal
	f.mu.Unlock()
	switch {
	case fn == nil:
		panic(err.Error())
	case first:
		fn(err)
	}
	return stoppedResult(stopped)
}

// stoppedErr is what a stopped machine answers: the entry may have
// committed and been applied by the other members, so a caller retries
// (Unavailable) elsewhere.
func stoppedErr(cause error) error {
	return fmt.Errorf("%w: this member's state machine stopped at a raft entry it cannot apply: %v", errs.Unavailable, cause)
}

func stoppedResult(cause error) Result { return Result{Err: stoppedErr(cause)} }
