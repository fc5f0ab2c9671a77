package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redcron/redcron/internal/lockcheck"
	"github.com/redcron/redcron/internal/lockwire"
	ledgerout "github.com/redcron/redcron/internal/outcome"
	"github.com/redcron/redcron/mutex"
)

// NewRedlockLocker adapts a Redlock to Locker. Each job's lock is the
// Redlock lock named after the job; a tick is claimed as the lock's
// occurrence (mutex.Occurrence), so no two replicas ever win the same tick
// and a tick at or before one already run is refused; the scheduler's
// instance id is stored as the lock's owner. AcquireAll makes its attempts
// in one mutex.Redlock.TryLockAll; Add refuses what the Redlock would.
// It returns nil for a nil Redlock, which New refuses.
//
// The instance id is the owner of every lock: run a leak scanner for it
// beside the scheduler (leakscan.New with the same id, Run, and its Check
// given to the Redlock with mutex.WithOwnerCheck), as redcron.New does.
// Without its heartbeat, any replica's leak scan reports this replica's
// live locks as orphaned, and the admin command's -fix would delete them.
func NewRedlockLocker(r *mutex.Redlock) Locker {
	if r == nil {
		return nil // New refuses a nil Locker
	}
	return &redlockLocker{r: r, check: lockwire.Of(r).Check}
}

type redlockLocker struct {
	r     *mutex.Redlock
	check func(name string, ttl, lead, reach time.Duration) error // the Redlock's (internal/lockwire)
}

// Check is the check the adapter offers Add (internal/lockcheck), the
// Redlock's own: a name or TTL the Redlock refuses, a lead (WithLockAhead)
// above its max TTL or a reach (WithMisfireGrace, WithCatchUp) longer than
// it keeps a tick's mark match mutex.ErrInvalidOption, since a tick
// claimed outside that span could run again.
func (a *redlockLocker) Check(req LockRequest) error {
	if err := a.check(req.Job, req.TTL, req.Lead, req.Reach); err != nil {
		return fmt.Errorf("%w (WithLockTTL, WithLockAhead, WithMisfireGrace, WithCatchUp)", err)
	}
	return nil
}

// Acquire implements Locker.
func (a *redlockLocker) Acquire(ctx context.Context, req LockRequest) (Lease, error) {
	l, err := a.r.TryLock(withTickets(ctx, req), req.Job, req.TTL, lockOptions(req)...)
	return leaseOf(l, err, req)
}

// AcquireAll implements Locker with one TryLockAll, which makes one
// attempt at every lock at once. With no requests (New's call), it offers
// its check (internal/lockcheck).
func (a *redlockLocker) AcquireAll(ctx context.Context, reqs []LockRequest) []LockResult {
	if len(reqs) == 0 {
		lockcheck.Offer(ctx, a.Check)
		return nil
	}
	mreqs := make([]mutex.Request, len(reqs))
	for i, req := range reqs {
		mreqs[i] = mutex.Request{Name: req.Job, TTL: req.TTL, Options: lockOptions(req)}
	}
	res := a.r.TryLockAll(withTickets(ctx, reqs...), mreqs)
	out := make([]LockResult, min(len(res), len(reqs)))
	for i := range out {
		out[i].Lease, out[i].Err = leaseOf(res[i].Lock, res[i].Err, reqs[i])
	}
	return out
}

// lockOptions returns the Redlock options of req: its owner, its tick as
// the lock's occurrence, and its permits.
func lockOptions(req LockRequest) []mutex.LockOption {
	return []mutex.LockOption{mutex.Owner(req.Owner), mutex.Occurrence(req.Tick), mutex.Permits(req.Permits)}
}

// withTickets returns ctx carrying the tickets of the trigger requests reqs
// take (internal/lockwire), for the Redlock; ctx itself when none does.
func withTickets(ctx context.Context, reqs ...LockRequest) context.Context {
	var tickets map[string]string
	for _, req := range reqs {
		if req.Ticket != "" {
			if tickets == nil {
				tickets = map[string]string{}
			}
			tickets[req.Job] = req.Ticket
		}
	}
	if tickets == nil {
		return ctx
	}
	return lockwire.WithTickets(ctx, tickets)
}

// leaseOf maps the outcome of a Redlock attempt for req to Acquire's.
func leaseOf(l *mutex.Lock, err error, req LockRequest) (Lease, error) {
	if err != nil {
		return nil, lockError(err, req)
	}
	return &redlockLease{l: l}, nil
}

// lockError maps a Redlock error for req to the scheduler's outcomes,
// keeping it as the cause.
func lockError(err error, req LockRequest) error {
	switch {
	case paused(err):
		return &lockOutcome{errPaused, "", err}
	case errors.Is(err, mutex.ErrAlreadyRun):
		return &lockOutcome{mutex.ErrAlreadyRun, "", err}
	case errors.Is(err, mutex.ErrHeld):
		owner, occurrence, ok := holderOf(err)
		switch {
		case ok && !req.Tick.IsZero() && occurrence < req.Tick.UnixMilli():
			// The previous run is still going.
			return &lockOutcome{ErrOverlap, "", err}
		case ok && req.Tick.IsZero() && req.Owner != "" && owner == req.Owner:
			// A trigger, while a run of this replica's holds the lock (or
			// has just ended and keeps it for its start group).
			return &lockOutcome{ErrOverlap, "", err}
		case ok && !req.Tick.IsZero() && occurrence == req.Tick.UnixMilli() && owner == req.Owner:
			// An earlier attempt of this replica at this very tick, given
			// up (its answers came too late) and being released: whoever
			// gets the lock next runs the tick, so this is not a refusal.
			return &lockOutcome{mutex.ErrNoQuorum, "held by this replica's own abandoned attempt at the tick: ", err}
		}
		return &lockOutcome{mutex.ErrHeld, "", err}
	case errors.Is(err, mutex.ErrNoQuorum):
		return &lockOutcome{mutex.ErrNoQuorum, "", err}
	}
	return err
}

// lockOutcome is the scheduler's outcome kind of a Redlock error, with the
// error as its cause; its text (the cause's vote tally) is made only when
// asked for, since refusals come by the thousand with many jobs. It
// matches its kind alone (errors.Is), not the cause's sentinels, which are
// the same errors (mutex's) but may say another thing: a lock held for an
// earlier tick is an ErrOverlap, not a mutex.ErrHeld; errors.As finds the
// cause's *mutex.QuorumError.
type lockOutcome struct {
	kind  error
	note  string
	cause error
}

func (e *lockOutcome) Error() string { return e.kind.Error() + ": " + e.note + e.cause.Error() }

func (e *lockOutcome) Unwrap() error { return e.kind }

// As finds target in the cause, as errors.As does.
func (e *lockOutcome) As(target any) bool { return errors.As(e.cause, target) }

// paused reports whether a Redlock error is a claim refused by a quorum of
// nodes on which the lock is paused.
func paused(err error) bool {
	var qe *mutex.QuorumError
	if !errors.As(err, &qe) || qe.Quorum == 0 {
		return false
	}
	n := 0
	for _, r := range qe.Nodes {
		if r.Vote == "paused" {
			n++
		}
	}
	return n >= qe.Quorum
}

// holderOf returns the owner and occurrence (unix ms, 0 if none) of the
// value holding the lock on a quorum, from a Redlock error matching
// mutex.ErrHeld.
func holderOf(err error) (owner string, occurrence int64, ok bool) {
	var qe *mutex.QuorumError
	if !errors.As(err, &qe) || qe.Holder == "" {
		return "", 0, false
	}
	if !qe.HolderOccurrence.IsZero() {
		occurrence = qe.HolderOccurrence.UnixMilli()
	}
	return qe.HolderOwner, occurrence, true
}

// redlockLease adapts a *mutex.Lock to Lease.
type redlockLease struct {
	l *mutex.Lock
}

func (l *redlockLease) Fence() uint64 { return l.l.Fence() }

// Keep implements Lease: the returned context is cancelled with a cause
// matching mutex.ErrLost when the lease is lost.
func (l *redlockLease) Keep(ctx context.Context) context.Context {
	// The lock's first keepalive (Keep is called at most once, and nothing
	// else keeps the lock alive): its context derives from ctx, and
	// Release cancels it (context.Canceled) when it stops the keepalive.
	kept, _ := l.l.KeepAlive(ctx)
	return context.WithValue(kept, validityKey{}, l.l.Until)
}

// Release implements Lease; the Redlock's ledger records o.
func (l *redlockLease) Release(ctx context.Context, o Outcome) error {
	if o.RunID != "" {
		ctx = ledgerout.NewContext(ctx, ledgerout.Outcome{Run: o.RunID, Result: o.Result, Err: o.Err, Try: o.Try, Delay: o.Delay})
	}
	return l.l.Release(ctx) // matching mutex.ErrLost if lost
}
