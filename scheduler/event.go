package scheduler

import (
	"strconv"
	"time"
)

// Event is one thing that happened in a Scheduler. Fields that do not apply
// to an event's Kind are zero. New kinds and fields may be added.
type Event struct {
	Kind EventKind
	// Job is the job's name.
	Job string
	// Tick is the occurrence concerned; zero for runs started by Trigger
	// and for EventJobAdded and EventJobRemoved.
	Tick time.Time
	// Instance is the id of the replica reporting the event.
	Instance string
	// RunID and Fence identify the run (EventRunStarted, EventRunFinished).
	RunID string
	Fence uint64
	// Result is how the run ended (EventRunFinished): success (the job
	// returned nil), failure (it returned an error), panic (the error is a
	// *PanicError), lock_lost (the lease was lost during the run, whatever
	// the job returned: another replica may have run concurrently),
	// timeout (it returned an error after its run timeout), canceled (it
	// returned an error after the scheduler cancelled it: Shutdown, or the
	// context given to Run), or abandoned (it ignored the cancellation of
	// its context at shutdown and did not return within 5 s; its lease was
	// released while it may still run).
	Result string
	// Skip is why the tick was not run (EventSkipped): held (another
	// replica holds the lock for this tick: normal), already_run (the
	// tick, or a later one, was already run: normal), overlap (the
	// previous run of the job, here or elsewhere, is still going), misfire
	// (the tick was noticed later than its misfire grace), no_quorum (no
	// lock attempt reached a decision before the retry deadline, the
	// misfire grace, or before the job's next tick was handled; Err says
	// why), or lease_lost (the lease was won but lost before the run
	// started, or given up by a hard stop; Err says why: the tick is
	// normally claimed by the lost lease, so that no replica runs it).
	Skip string
	// StartDelay is the run's start minus its tick, by the scheduler's
	// clock (EventRunStarted of a scheduled run).
	StartDelay time.Duration
	// Duration is how long the run took (EventRunFinished).
	Duration time.Duration
	// Attempts is the number of lock attempts made for the tick or trigger
	// so far (EventRunStarted, EventRunFinished, EventSkipped,
	// EventLockRetry).
	Attempts int
	// Err is the run's error (EventRunFinished, unless a success), the
	// last lock error (EventSkipped for no_quorum, EventLockRetry), or
	// why the lease was lost (EventSkipped for lease_lost).
	Err error
}

// EventKind says what an Event reports.
type EventKind int

// Event kinds.
const (
	// EventJobAdded reports a job registered with Add, so that metrics can
	// create its series before it first runs.
	EventJobAdded EventKind = iota + 1
	// EventJobRemoved reports a job unregistered with Remove. No skip of
	// the job follows it; a run already started still reports its end
	// (EventRunFinished). A run whose start, or a lock attempt whose
	// retry, coincides with Remove may still report it just after
	// (EventRunStarted, EventLockRetry): the start path takes no lock
	// that Remove could order it by.
	EventJobRemoved
	// EventRunStarted reports that this replica won the lease and started
	// the job.
	EventRunStarted
	// EventRunFinished reports the end of a run started on this replica.
	EventRunFinished
	// EventSkipped reports a tick this replica did not run, and why.
	EventSkipped
	// EventLockRetry reports a lock attempt that reached no decision and
	// will be retried.
	EventLockRetry
)

var eventKindNames = [...]string{
	EventJobAdded:    "job_added",
	EventJobRemoved:  "job_removed",
	EventRunStarted:  "run_started",
	EventRunFinished: "run_finished",
	EventSkipped:     "skipped",
	EventLockRetry:   "lock_retry",
}

// String returns the kind's snake_case name, such as "run_finished".
func (k EventKind) String() string { return enumString(eventKindNames[:], int(k), "EventKind") }

// The results of a run (Event.Result, Entry.LastResult); each is the value
// of the result label of the run metrics.
const (
	resultSuccess   = "success"   // the job returned nil
	resultFailure   = "failure"   // the job returned an error
	resultPanic     = "panic"     // the job panicked; the error is a *PanicError
	resultLockLost  = "lock_lost" // the lease was lost during the run
	resultTimeout   = "timeout"   // the job returned an error after its run timeout
	resultCanceled  = "canceled"  // the job returned an error after the scheduler cancelled it
	resultAbandoned = "abandoned" // the job ignored its context's cancellation at shutdown
)

// The reasons a tick was skipped (Event.Skip, Entry.LastSkip); each is the
// value of the reason label of the skip metrics.
const (
	skipHeld       = "held"        // another replica holds the lock for this tick
	skipAlreadyRun = "already_run" // the tick, or a later one, was already run
	skipOverlap    = "overlap"     // the previous run of the job is still going
	skipMisfire    = "misfire"     // noticed later than the misfire grace
	skipNoQuorum   = "no_quorum"   // no lock attempt reached a decision in time
	skipLeaseLost  = "lease_lost"  // the lease was lost before the run started
)

func enumString(names []string, i int, typ string) string {
	if i == 0 {
		return "none"
	}
	if i > 0 && i < len(names) {
		return names[i]
	}
	return typ + "(" + strconv.Itoa(i) + ")"
}
