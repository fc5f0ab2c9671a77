package scheduler

import (
	"strconv"
	"time"
)

// Observer receives the scheduler's events, for metrics or auditing.
// Observe is called synchronously from the scheduler's goroutines, possibly
// concurrently, sometimes with the scheduler's own lock held:
// implementations must be safe for concurrent use, must not block and must
// not call the Scheduler's methods.
type Observer interface {
	Observe(Event)
}

// ObserverFunc adapts a function to Observer.
type ObserverFunc func(Event)

// Observe calls f(e).
func (f ObserverFunc) Observe(e Event) { f(e) }

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
	// Result is how the run ended (EventRunFinished).
	Result Result
	// Skip is why the tick was not run (EventSkipped).
	Skip SkipReason
	// StartDelay is the run's start minus its tick, by the scheduler's
	// clock (EventRunStarted of a scheduled run).
	StartDelay time.Duration
	// Duration is how long the run took (EventRunFinished).
	Duration time.Duration
	// Attempts is the number of lock attempts made for the tick or trigger
	// so far (EventRunStarted, EventRunFinished, EventSkipped,
	// EventLockRetry).
	Attempts int
	// Err is the run's error (EventRunFinished, unless ResultSuccess), the
	// last lock error (EventSkipped with SkipNoQuorum, EventLockRetry), or
	// why the lease was lost (EventSkipped with SkipLeaseLost).
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

// Result is how a run ended. The zero Result means no run has ended.
type Result int

// Results of a run.
const (
	// ResultSuccess: the job returned nil.
	ResultSuccess Result = iota + 1
	// ResultFailure: the job returned an error.
	ResultFailure
	// ResultPanic: the job panicked; the error is a *PanicError.
	ResultPanic
	// ResultLockLost: the lease was lost during the run, whatever the job
	// returned; another replica may have run concurrently.
	ResultLockLost
	// ResultTimeout: the job returned an error after its run timeout
	// passed.
	ResultTimeout
	// ResultCanceled: the job returned an error after the scheduler
	// cancelled it (Shutdown, or the context given to Run).
	ResultCanceled
	// ResultAbandoned: the job ignored the cancellation of its context at
	// shutdown and did not return within 5 s; its lease was released while
	// it may still run.
	ResultAbandoned
)

var resultNames = [...]string{
	ResultSuccess:   "success",
	ResultFailure:   "failure",
	ResultPanic:     "panic",
	ResultLockLost:  "lock_lost",
	ResultTimeout:   "timeout",
	ResultCanceled:  "canceled",
	ResultAbandoned: "abandoned",
}

// String returns the result's snake_case label, such as "lock_lost".
func (r Result) String() string { return enumString(resultNames[:], int(r), "Result") }

// SkipReason is why a replica did not run a tick. The zero SkipReason means
// the tick was not skipped.
type SkipReason int

// Reasons for skipping a tick.
const (
	// SkipHeld: another replica holds the lock for this tick (normal).
	SkipHeld SkipReason = iota + 1
	// SkipAlreadyRun: the tick, or a later one, was already run (normal).
	SkipAlreadyRun
	// SkipOverlap: the previous run of the job, here or elsewhere, is still
	// going.
	SkipOverlap
	// SkipMisfire: the tick was noticed later than its misfire grace.
	SkipMisfire
	// SkipNoQuorum: no lock attempt reached a decision before the retry
	// deadline (the misfire grace), or before the job's next tick was
	// handled, which ends the retries; Err then says so.
	SkipNoQuorum
	// SkipLeaseLost: the lease of the tick was won but lost before its run
	// started (with WithLockAhead, before the tick came), or given up by a
	// hard stop (the context given to Run, or Shutdown's, done); Err says
	// why. The tick is normally claimed by the lost lease, so that no
	// replica runs it (one that wins it instead is reported as SkipHeld).
	SkipLeaseLost
)

var skipReasonNames = [...]string{
	SkipHeld:       "held",
	SkipAlreadyRun: "already_run",
	SkipOverlap:    "overlap",
	SkipMisfire:    "misfire",
	SkipNoQuorum:   "no_quorum",
	SkipLeaseLost:  "lease_lost",
}

// String returns the reason's snake_case label, such as "held".
func (r SkipReason) String() string { return enumString(skipReasonNames[:], int(r), "SkipReason") }

func enumString(names []string, i int, typ string) string {
	if i == 0 {
		return "none"
	}
	if i > 0 && i < len(names) {
		return names[i]
	}
	return typ + "(" + strconv.Itoa(i) + ")"
}
