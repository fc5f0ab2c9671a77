package scheduler

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/redcron/redcron/mutex"
)

const (
	// maxAttemptTimeout bounds one lock attempt (and TTL/3 does too).
	maxAttemptTimeout = 5 * time.Second
	// releaseTimeout bounds the release of a lease.
	releaseTimeout = 5 * time.Second
	// A retry of an undecided lock attempt waits a random delay of at
	// least retryMin and at most retryFirstMax, doubled with every attempt
	// up to retryCap: 10-60ms, 10-120ms, 10-240ms, ... then 10ms-1s. Most
	// undecided attempts are split votes between replicas that fired at
	// the same instant: a short random delay lets one of them win soon.
	retryMin      = 10 * time.Millisecond
	retryFirstMax = 60 * time.Millisecond
	retryCap      = time.Second
)

// acquire makes lock attempts for req until one wins, one gets a definite
// refusal (mutex.ErrHeld, mutex.ErrAlreadyRun, ErrOverlap), or ctx is done. Undecided
// attempts are retried after a random delay, as long as the retry starts
// before the deadline (by the scheduler's clock); the first attempt is
// always made, or, if first is not nil, was already made (in a batch) with
// that result. Under OverlapQueueOne or OverlapReplace, an ErrOverlap of a
// tick is tried again too, until the deadline: as soon as a run of the job
// here releases its lease, and otherwise after a random delay that grows
// to a second (or a quarter of the job's period, if shorter), for a run
// on another replica. It returns the number of
// attempts made.
func (s *Scheduler) acquire(ctx context.Context, e *entry, req LockRequest, deadline time.Time, first *LockResult) (Lease, int, error) {
	retryUntil := time.Now().Add(deadline.Sub(s.cfg.clock())) // by the monotonic clock
	waits := waitsForRelease(e, req)
	var (
		lastErr  error
		released <-chan struct{} // closed at a release here after the attempt began
		polls    int             // attempts refused with ErrOverlap so far
	)
	for attempt := 1; ; attempt++ {
		var (
			lease Lease
			err   error
		)
		if waits {
			released = s.releaseSignal(e)
		}
		if attempt == 1 && first != nil {
			lease, err = first.Lease, first.Err
		} else {
			actx, cancel := context.WithTimeout(ctx, attemptTimeout(req.TTL))
			lease, err = s.locker.Acquire(actx, req)
			cancel()
		}
		switch {
		case err == nil && lease != nil:
			return lease, attempt, nil
		case err == nil:
			err = errors.New("scheduler: Locker returned neither a Lease nor an error")
		case waits && errors.Is(err, ErrOverlap):
			lastErr = err // kept if the wait ends with ctx
			if polls++; polls == 1 {
				s.log.LogAttrs(ctx, slog.LevelDebug, "previous run still going; the tick waits for its lease",
					tickAttrs(e.name, req.Tick, slog.String("overlap", string(e.cfg.overlap)))...)
			}
			if !awaitRelease(ctx, released, pollDelay(e, req.Tick, polls), retryUntil) {
				return nil, attempt, err
			}
			continue
		case refused(err):
			return nil, attempt, err
		}
		// Keep the locker's own error rather than the one caused by the end
		// of ctx.
		if lastErr == nil || ctx.Err() == nil {
			lastErr = err
		}
		delay := retryDelay(attempt)
		if ctx.Err() != nil || time.Until(retryUntil) < delay {
			return nil, attempt, lastErr
		}
		s.emit(e, Event{Kind: KindLockRetry, Job: e.name, Tick: req.Tick, Attempts: attempt, Err: err})
		if s.log.Enabled(ctx, slog.LevelDebug) { // retries come by the thousand in a rush
			s.log.LogAttrs(ctx, slog.LevelDebug, "lock attempt undecided; retrying",
				tickAttrs(e.name, req.Tick, slog.Int("attempt", attempt), slog.Duration("delay", delay), slog.Any("error", err))...)
		}
		if !sleep(ctx, delay) {
			return nil, attempt, lastErr
		}
	}
}

// attemptTimeout bounds one lock attempt for a lease of the given TTL.
func attemptTimeout(ttl time.Duration) time.Duration {
	return min(maxAttemptTimeout, ttl/3)
}

// refused reports whether err is a definite refusal of a lock attempt,
// which is not retried.
func refused(err error) bool {
	if o, ok := err.(*lockOutcome); ok { // the Redlock's answers: no walk of their vote tallies
		return o.kind == mutex.ErrHeld || o.kind == mutex.ErrAlreadyRun || o.kind == ErrOverlap || o.kind == errPaused
	}
	return isAny(err, mutex.ErrHeld, mutex.ErrAlreadyRun, ErrOverlap, errPaused)
}

// isAny reports whether errors.Is(err, t) for any t of targets (sentinels,
// of comparable types), walking err's tree once rather than once per
// target: a shard's "asked again" answers come by the thousand.
func isAny(err error, targets ...error) bool {
	for err != nil {
		for _, t := range targets {
			if err == t {
				return true
			}
			if x, ok := err.(interface{ Is(error) bool }); ok && x.Is(t) {
				return true
			}
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if isAny(e, targets...) {
					return true
				}
			}
			return false
		default:
			return false
		}
	}
	return false
}

// retryDelay returns a random delay before the attempt after attempt.
func retryDelay(attempt int) time.Duration {
	hi := retryCap
	if attempt < 8 {
		hi = min(retryFirstMax<<(attempt-1), retryCap)
	}
	return retryMin + rand.N(hi-retryMin+1)
}

// pollDelay is how long a tick of e waiting for a run's release on
// another replica waits before its polls-th next attempt: retryDelay, at
// most a quarter of the job's period, so that a release before the next
// tick is seen before that tick comes and replaces the waiting one.
func pollDelay(e *entry, tick time.Time, polls int) time.Duration {
	d := retryDelay(polls)
	if next := e.sched.Next(tick); next.After(tick) {
		d = min(d, max(retryMin, next.Sub(tick)/4))
	}
	return d
}

// sleep waits for d or until ctx is done, and reports whether it waited
// for d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
