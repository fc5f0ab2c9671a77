package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// OverlapPolicy says what a tick does when it comes while a run of an
// earlier tick, or a Trigger's run, still holds the job's lock, on this
// replica or another (WithOverlap).
type OverlapPolicy string

// The overlap policies.
const (
	// OverlapSkip skips the tick (reason overlap). It is the default.
	OverlapSkip OverlapPolicy = "skip"
	// OverlapQueueOne makes the tick wait for the running run's lease and
	// run as soon as it is released, within the tick's misfire grace.
	OverlapQueueOne OverlapPolicy = "queue_one"
	// OverlapReplace cancels the running run (context cause ErrReplaced)
	// and runs the tick once the run's lease is released, as
	// OverlapQueueOne does.
	OverlapReplace OverlapPolicy = "replace"
)

// waitsForRelease reports whether an attempt of req that finds the lock
// held for an earlier run waits for its release: a tick of a job whose
// policy is not OverlapSkip.
func waitsForRelease(e *entry, req LockRequest) bool {
	return !req.Tick.IsZero() && e.cfg.overlap != OverlapSkip
}

// queued reports whether a lock attempt of req refused with err is to
// wait for the release of the lease that refused it (see waitsForRelease).
func queued(e *entry, req LockRequest, err error) bool {
	return waitsForRelease(e, req) && errors.Is(err, ErrOverlap)
}

// releaseSignal returns a channel closed once a lease of a run of e on
// this replica is next released (see end). Taken before a lock attempt, it
// wakes a tick waiting for its job's run here as soon as the run's lease is
// released, without polling the Locker.
func (s *Scheduler) releaseSignal(e *entry) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.released == nil {
		e.released = make(chan struct{})
	}
	return e.released
}

// awaitRelease waits until released is closed, for delay, or until the
// monotonic time until, whichever comes first, and reports whether to make
// another lock attempt: false if until has passed or ctx is done.
func awaitRelease(ctx context.Context, released <-chan struct{}, delay time.Duration, until time.Time) bool {
	left := time.Until(until)
	if left <= 0 {
		return false
	}
	t := time.NewTimer(min(delay, left))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-released:
	case <-t.C:
	}
	return ctx.Err() == nil
}

// replace cancels the run of e going on here, if there is one, with a
// cause matching ErrReplaced that names tick, the tick replacing it.
func (s *Scheduler) replace(ctx context.Context, e *entry, tick time.Time) {
	r := e.latest.Load()
	if r == nil || r.cancel == nil || r.ended.Load() {
		return
	}
	r.cancel(fmt.Errorf("%w (%s)", ErrReplaced, tick.UTC().Format(time.RFC3339Nano)))
	s.log.LogAttrs(ctx, slog.LevelInfo, "run replaced by a newer tick",
		r.attrs(slog.Time("replaced_by", tick))...)
}
