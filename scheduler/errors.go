package scheduler

import (
	"errors"
	"fmt"

	"github.com/redcron/redcron/mutex"
)

// ErrOverlap is a Locker's refusal of a tick because the job's lock is
// held for an earlier tick: the previous run is still going. A Locker's
// other outcomes are mutex's: mutex.ErrHeld (another replica holds the
// job's lock for the same tick), mutex.ErrAlreadyRun (the tick, or a
// later one, was already run) and mutex.ErrNoQuorum (no decision was
// reached; a later attempt may succeed), one error each for every layer.
var ErrOverlap = errors.New("scheduler: previous run still holds the lock")

// errPaused is a Locker's refusal of a tick of a paused job (over Redis, the
// admin command's pause): a skip with reason paused.
var errPaused = fmt.Errorf("%w: job paused", mutex.ErrNotAcquired)

// Context causes a job can read with context.Cause.
var (
	// ErrShutdown is the cause when the scheduler shuts down.
	ErrShutdown = errors.New("scheduler: shutting down")
	// ErrRunTimeout is the cause when the job's run timeout passed.
	ErrRunTimeout = errors.New("scheduler: run timeout")
	// ErrReplaced is the cause when a newer tick of the job replaces the
	// run (WithOverlap with OverlapReplace).
	ErrReplaced = errors.New("scheduler: replaced by a newer tick")
)

// Errors returned by the Scheduler's methods.
var (
	// ErrClosed is returned by Run after Shutdown, and by calls made after it.
	ErrClosed = errors.New("scheduler: closed")
	// ErrDuplicateJob is returned by Add for a name already registered.
	ErrDuplicateJob = errors.New("scheduler: duplicate job name")
	// ErrUnknownJob is returned for a name that is not registered.
	ErrUnknownJob = errors.New("scheduler: unknown job")
	// ErrInvalidJob is returned by Add for a job name that is not valid,
	// or a schedule it cannot parse.
	ErrInvalidJob = errors.New("scheduler: invalid job")
)

// PanicError is the error recorded for a job that panicked.
type PanicError struct {
	Job   string // the job's name
	Value any    // the value passed to panic
	Stack []byte // the goroutine's stack at the panic
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("scheduler: job %q panicked: %v", e.Job, e.Value)
}

// Unwrap returns the panic value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}
