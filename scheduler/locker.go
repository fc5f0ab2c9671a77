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
	// Lead and Reach are how long before and after its tick the job may
	// claim it (WithLockAhead; the longer of the misfire grace and the
	// catch-up window). They are set on the request Add passes to
	// CheckRequest, so that a Locker that cannot keep a tick claimed over
	// that span refuses the job.
	Lead, Reach time.Duration
}

// Locker hands out leases for occurrences of jobs. The scheduler calls
// Acquire once per attempt and decides itself whether to retry.
//
// Acquire returns a Lease, or an error that matches (errors.Is) one of:
//   - ErrHeld: another replica holds the job's lock for this very tick;
//   - ErrOverlap: the job's lock is held for an earlier tick, that is, the
//     previous run is still going;
//   - ErrAlreadyRun: the tick (or a later one) was already run;
//   - ErrNoQuorum: no decision could be reached (split vote, nodes down);
//     a later attempt may succeed.
//
// Any other error is treated like ErrNoQuorum and reported.
//
// Use NewRedlockLocker for Redis, or schedulertest.NewLocker in tests.
type Locker interface {
	Acquire(ctx context.Context, req LockRequest) (Lease, error)
}

// BatchLocker is a Locker that can make the first attempt at many leases in
// one call, for instance in one round trip per node. When several ticks come
// due at the same instant, the scheduler makes their first lock attempts in
// one call of AcquireAll, bounded by ctx; it retries the undecided ones one
// by one with Acquire, as it does for a single tick.
//
// AcquireAll returns one LockResult per request, in the order of reqs; each
// has the meaning Acquire's return would have for its request (a Lease, or
// an error matching ErrHeld, ErrOverlap, ErrAlreadyRun or ErrNoQuorum), and a
// request that fails does not fail the others. Every Lease returned is the
// caller's to release.
type BatchLocker interface {
	Locker
	AcquireAll(ctx context.Context, reqs []LockRequest) []LockResult
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
	// ErrLockLost, as soon as the lease can no longer be proven. It is
	// called at most once.
	Keep(ctx context.Context) context.Context
	// Release stops keeping the lease alive, records the tick as run and
	// releases the lock where it is still held. It returns an error
	// matching ErrLockLost if the lease had been lost before.
	Release(ctx context.Context) error
}

// Heartbeater is implemented by lockers that publish replica liveness. The
// scheduler calls Heartbeat periodically while it runs; the leak scan uses
// the heartbeats to tell the locks of live replicas from those of dead ones.
type Heartbeater interface {
	Heartbeat(ctx context.Context, owner string, ttl time.Duration) error
}

// RequestChecker is implemented by lockers that can tell, without I/O,
// whether they would refuse a job's lock requests (a name or a TTL out of
// their range). Add calls CheckRequest with the job's name and TTL, so bad
// input is refused when the job is registered rather than at every tick.
type RequestChecker interface {
	CheckRequest(req LockRequest) error
}

// Flusher is implemented by lockers whose releases may still be under way
// on some nodes when Lease.Release has returned (it returns once a
// majority answered). Before Run returns, it calls Flush, bounded by 5s, so
// that a process that exits after Run or Shutdown leaves no lock behind on
// a slow node.
type Flusher interface {
	Flush(ctx context.Context) error
}

// LeakScanner is implemented by lockers that can look for leaked locks.
// Run calls ScanLeaks periodically on every replica (every 5 minutes unless
// WithLeakScan says otherwise; never with WithLeakScan(0)); the
// locker lets one replica scan at a time and returns an error matching
// ErrHeld to the others. It returns the number of leaked locks by class
// (no_expiry, orphaned, minority, over_age, unparseable).
type LeakScanner interface {
	ScanLeaks(ctx context.Context) (map[string]int, error)
}
