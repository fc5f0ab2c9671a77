package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redcron/redcron/mutex"
)

// WithClusterLimit makes each run of the job hold a permit of sem, a
// semaphore over the nodes (mutex.Redlock.Semaphore): jobs given the same
// semaphore run at most as many at once in the whole fleet as it has
// permits ("at most 2 report jobs at once"), triggered runs included.
//
// A run takes its permit once its tick's lease is won and the tick has
// come, waiting for one up to the tick's misfire grace (or catch-up
// window), and holds it, kept alive, until it returns; a tick that gets
// none in time is skipped with reason cluster_limit (its lease released,
// the tick counted as had). A permit is held for the job's lock TTL and
// extended while the run goes on: a crashed replica's permit comes back
// when that TTL runs out, and a run whose permit can no longer be proven
// is cancelled, with a cause matching mutex.ErrLost, as on the loss of its
// lease. A trigger waits for a permit up to the misfire grace.
//
// Waiting runs are not queued: when a permit frees, any waiter may take
// it (see mutex.Semaphore). Give every replica the same semaphore name and
// size for a job.
func WithClusterLimit(sem *mutex.Semaphore) JobOption {
	return func(c *jobConfig) error {
		if sem == nil {
			return optionError("WithClusterLimit", "nil semaphore")
		}
		c.limit = sem
		return nil
	}
}

// errClusterLimit: no permit of the job's cluster limit came free in time.
var errClusterLimit = errors.New("scheduler: no permit of the job's cluster limit came free in time")

// takePermit takes a permit of r's job's cluster limit, if it has one,
// waiting for it until the tick's late limit (for a manual run, its
// misfire grace from now) or until kept, the lease's kept context, is
// done; it returns why it could not.
func (s *Scheduler) takePermit(r *run, kept context.Context) error {
	sem := r.e.cfg.limit
	if sem == nil {
		return nil
	}
	deadline := r.info.Tick.Add(r.e.cfg.lateLimit())
	if r.info.Tick.IsZero() {
		deadline = s.cfg.clock().Add(r.e.cfg.misfireGrace)
	}
	ctx, cancel := context.WithTimeout(kept, deadline.Sub(s.cfg.clock()))
	defer cancel()
	p, err := sem.Acquire(ctx, r.e.cfg.lockTTL, mutex.Owner(s.cfg.instanceID))
	switch {
	case err == nil:
		r.permit = p
		return nil
	case kept.Err() != nil:
		return context.Cause(kept)
	}
	return fmt.Errorf("%w: %w", errClusterLimit, err)
}

// withPermit returns base, cancelled with its permit's loss too, if r
// holds a permit, and a function that stops watching the permit.
func withPermit(r *run, base context.Context) (context.Context, func()) {
	if r.permit == nil {
		return base, func() {}
	}
	kept, stopKeep := r.permit.KeepAlive(context.WithoutCancel(base))
	ctx, cancel := context.WithCancelCause(base)
	stopWatch := context.AfterFunc(kept, func() { cancel(context.Cause(kept)) })
	return ctx, func() {
		stopWatch()
		stopKeep()
		cancel(nil)
	}
}

// releasePermit releases r's permit, if it holds one, once its run ended.
func (r *run) releasePermit() {
	if r.permit == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.permit.Release(ctx) // a permit not released expires with its TTL
}
