package scheduler

import (
	"context"
	"time"
)

// LockRequest names the lease the scheduler wants for one occurrence of one
// job.
type LockRequest struct {
	// Job is the registered job name; the lock is per job.
	Job string
	// Tick is the occurrence: the schedule's own time, identical on every
	// replica. The zero time means a manual run (Trigger): the lock still
	// excludes concurrent runs, but no occurrence is claimed or checked.
	Tick time.Time
	// TTL is the lease's time to live. The lease is kept alive while the job
	// runs, so TTL bounds how long a crashed holder blocks the job, not how
	// long a run may take.
	TTL time.Duration
	// Owner is the scheduler's instance id, stored with the lock so that the
	// leak scan can tell live owners from dead ones.
	Owner string
	// Ticket, for a Trigger of a request the front door took from the
	// nodes (the admin command's trigger), is the request the lease must
	// take, so that one lease at most, on any replica, runs it: a Locker
	// without requests (the in-memory one of tests) ignores it.
	Ticket string
	// Permits, above 0, asks for one of the Permits permits of a lock
	// that admits that many holders at once (WithClusterLimit): Job is
	// then the limit's name, Tick zero. A Locker without permits (the
	// in-memory one of tests) treats it as the lock called Job: one
	// holder at a time, a stricter limit.
	Permits int
	// Lead and Reach are how long before and after its tick the job may
	// claim it (WithLockAhead; the longer of the misfire grace and the
	// catch-up window). They are set on the request Add checks, so that
	// a Locker of redcron's that cannot keep a tick claimed over that span
	// refuses the job when it is added.
	Lead, Reach time.Duration
}

// Locker hands out leases for occurrences of jobs. It is the scheduler's
// one seam: NewRedlockLocker adapts a Redlock; tests use an in-memory one.
//
// Acquire makes one attempt at a lease and returns it, or an error that
// matches (errors.Is) one of:
//   - mutex.ErrHeld: another replica holds the job's lock for this very tick;
//   - ErrOverlap: the job's lock is held for an earlier tick, that is, the
//     previous run is still going;
//   - mutex.ErrAlreadyRun: the tick (or a later one) was already run;
//   - mutex.ErrNoQuorum: no decision could be reached (split vote, nodes down);
//     a later attempt may succeed.
//
// Any other error is treated like mutex.ErrNoQuorum and reported. The scheduler
// decides itself whether to retry.
//
// AcquireAll makes the first attempt at many leases in one call (ticks of
// several jobs due at the same instant), for instance in one round trip
// per node. It returns one LockResult per request, in order, each with
// the meaning Acquire's return would have; a request that fails does not
// fail the others. A Locker without a cheaper way may call Acquire for
// each.
//
// New calls AcquireAll once with no requests: it must then return at once,
// without I/O (no results). redcron's own Lockers (NewRedlockLocker's,
// schedulertest's) answer that call with their check of a job's requests
// (a name or a TTL out of their range, a lead or reach longer than they
// keep a tick claimed), which Add then applies, so that bad input is
// refused when the job is registered; another Locker refuses bad requests
// when asked for them, as Acquire's errors.
type Locker interface {
	Acquire(ctx context.Context, req LockRequest) (Lease, error)
	AcquireAll(ctx context.Context, reqs []LockRequest) []LockResult
}

// checkRequest returns the refusal of req by the Locker's check, if it
// offers one; a Locker of another's checks its requests when asked for
// them.
func (s *Scheduler) checkRequest(req LockRequest) error {
	if s.check == nil {
		return nil
	}
	return s.check(req)
}

// LockResult is the outcome of one request of AcquireAll: a Lease or an
// error as Acquire would return.
type LockResult struct {
	Lease Lease
	Err   error
}

// won reports whether r holds a lease.
func (r LockResult) won() bool { return r.Err == nil && r.Lease != nil }

// Lease is one held lock as the scheduler sees it.
type Lease interface {
	// Fence returns the fencing token of this acquisition: it increases
	// strictly with every acquisition of the same job's lock. Zero means
	// the locker does not issue tokens.
	Fence() uint64
	// Keep keeps the lease alive until Release is called and returns a
	// context derived from ctx that is cancelled, with a cause matching
	// mutex.ErrLost, as soon as the lease can no longer be proven. It is
	// called at most once.
	Keep(ctx context.Context) context.Context
	// Release stops keeping the lease alive, records the tick as run and
	// releases the lock where it is still held, and records the run's
	// Outcome in the job's ledger, if the Locker keeps one (the zero
	// Outcome for a lease no run used). It returns an error matching
	// mutex.ErrLost if the lease had been lost before.
	Release(ctx context.Context, o Outcome) error
}

// Outcome is how a run ended, as the scheduler passes it to Lease.Release
// for the job's ledger: the run's id, its result (a result of Event), its
// error, how many tries it took (WithRetry) and how long after its tick it
// started.
type Outcome struct {
	RunID  string
	Result string
	Err    error
	Try    int
	Delay  time.Duration
}
