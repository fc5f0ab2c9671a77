package scheduler

import (
	"time"
)

// Event is one thing that happened in a Scheduler. Fields that do not apply
// to an event's Kind are zero. New kinds and fields may be added.
type Event struct {
	// Kind says what happened:
	//   - job_added: a job was registered with Add, so that metrics can
	//     create its series before it first runs;
	//   - job_removed: a job was unregistered with Remove. No skip of the
	//     job follows; a run already started still reports its end. A run
	//     whose start, or a lock attempt whose retry, coincides with Remove
	//     may still report it just after: the start path takes no lock
	//     that Remove could order it by;
	//   - run_started: this replica won the lease and started the job;
	//   - run_finished: a run started on this replica ended;
	//   - skipped: this replica did not run a tick, and says why;
	//   - lock_retry: a lock attempt reached no decision and will be
	//     retried;
	//   - run_retry: a try of a run failed and the run will be tried again,
	//     under the same lease (WithRetry).
	Kind Kind
	// Job is the job's name.
	Job string
	// Tick is the occurrence concerned; zero for runs started by Trigger
	// and for job_added and job_removed.
	Tick time.Time
	// Instance is the id of the replica reporting the event.
	Instance string
	// RunID and Fence identify the run (run_started, run_finished).
	RunID string
	Fence uint64
	// Result is how the run ended (run_finished): success (the job
	// returned nil), failure (it returned an error), panic (the error is a
	// *PanicError), lock_lost (the lease was lost during the run, whatever
	// the job returned: another replica may have run concurrently),
	// timeout (it returned an error after its run timeout), canceled (it
	// returned an error after the scheduler cancelled it: Shutdown, the
	// context given to Run, or a newer tick that replaced it, when Err
	// matches ErrReplaced), or abandoned (it ignored the cancellation of
	// its context at shutdown and did not return within 5 s; its lease was
	// released while it may still run).
	Result string
	// Skip is why the tick was not run (skipped): held (another
	// replica holds the lock for this tick: normal), already_run (the
	// tick, or a later one, was already run: normal), overlap (the
	// previous run of the job, here or elsewhere, is still going; under
	// OverlapQueueOne or OverlapReplace, it was still going when the
	// tick's grace ended or the next tick came), misfire
	// (the tick was noticed later than its misfire grace), no_quorum (no
	// lock attempt reached a decision before the retry deadline, the
	// misfire grace, or before the job's next tick was handled; Err says
	// why), or lease_lost (the lease was won but lost before the run
	// started, or given up by a hard stop; Err says why: the tick is
	// normally claimed by the lost lease, so that no replica runs it),
	// paused (the job is paused on a majority of the nodes: the admin
	// command's pause, until its resume), or max_runs (every run slot of
	// this replica was taken, WithMaxConcurrentRuns: the tick was left to
	// the other replicas without a lock attempt), or overload (as
	// no_quorum, but the nodes were not at fault: this replica's claims of
	// the job's shard were behind, and the tick waited behind them until
	// its job's next tick or its grace came).
	Skip string
	// StartDelay is the run's start minus its tick, by the scheduler's
	// clock (run_started of a scheduled run).
	StartDelay time.Duration
	// Try is the try of the run (run_retry, run_finished): 1 for the
	// first; more with WithRetry.
	Try int
	// Duration is how long the run took (run_finished), all its tries.
	Duration time.Duration
	// Attempts is the number of lock attempts made for the tick or trigger
	// so far (run_started, run_finished, skipped,
	// lock_retry).
	Attempts int
	// Err is the run's error (run_finished, unless a success; run_retry), the
	// last lock error (skipped for no_quorum, lock_retry), or
	// why the lease was lost (skipped for lease_lost).
	Err error
}

// Kind is what an Event reports (Event.Kind): one of the constants below,
// each also the word the scheduler's logs use for it.
type Kind string

// The kinds of events; see Event.Kind.
const (
	KindJobAdded    Kind = "job_added"    // a job was registered (Add)
	KindJobRemoved  Kind = "job_removed"  // a job was unregistered (Remove)
	KindRunStarted  Kind = "run_started"  // this replica won a tick's lease and started the job
	KindRunFinished Kind = "run_finished" // a run started on this replica ended
	KindSkipped     Kind = "skipped"      // this replica did not run a tick (Event.Skip says why)
	KindLockRetry   Kind = "lock_retry"   // a lock attempt reached no decision and will be retried
	KindRunRetry    Kind = "run_retry"    // a try of a run failed and will be tried again (WithRetry)
)

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
	skipHeld       = "held"          // another replica holds the lock for this tick
	skipAlreadyRun = "already_run"   // the tick, or a later one, was already run
	skipOverlap    = "overlap"       // the previous run of the job is still going
	skipMisfire    = "misfire"       // noticed later than the misfire grace
	skipNoQuorum   = "no_quorum"     // no lock attempt reached a decision in time
	skipLeaseLost  = "lease_lost"    // the lease was lost before the run started
	skipPaused     = "paused"        // the job is paused cluster-wide
	skipMaxRuns    = "max_runs"      // every run slot of this replica was taken
	skipLimit      = "cluster_limit" // no permit of the job's cluster limit came free in time (WithClusterLimit)
	skipOverload   = "overload"      // this replica's claims of the job's shard were behind
)
