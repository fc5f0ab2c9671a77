package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/mutex"
)

// WithClusterLimit makes each run of the job hold one of the n permits
// of the limit called name, a lock that admits n holders at once
// (mutex.Permits; its permits are the locks name#0 to name#(n-1)): the
// jobs given the same limit run at most n at once in the whole fleet ("at
// most 2 report jobs at once"), triggered runs included. n is 1 to 64, and
// every replica must give a limit the same n.
//
// A run takes its permit once its tick's lease is won and the tick has
// come, waiting for one up to the tick's misfire grace (or catch-up
// window), and holds it, kept alive, until it returns; a tick that gets
// none in time is skipped with reason cluster_limit (its lease released,
// the tick counted as had). A permit is held for the job's lock TTL and
// extended while the run goes on: a crashed replica's permit comes back
// when that TTL runs out, and a run whose permit can no longer be proven
// is cancelled, with a cause matching mutex.ErrLost, as on the loss of its
// lease. A trigger waits for a permit up to the misfire grace. Waiting
// runs are not queued: when a permit frees, any waiter may take it.
func WithClusterLimit(name string, n int) JobOption {
	return func(c *jobConfig) error {
		if n < 1 || n > 64 {
			return optionError("WithClusterLimit", "limit %q: %d permits, want 1 to 64", name, n)
		}
		if err := engine.CheckName(name); err != nil {
			return optionError("WithClusterLimit", "limit %q: %v", name, err)
		}
		if err := engine.CheckName(name + "#" + strconv.Itoa(n-1)); err != nil { // its permits' names (mutex.Permits)
			return optionError("WithClusterLimit", "limit %q: its permits' names: %v", name, err)
		}
		c.limit, c.permits = name, n
		return nil
	}
}

// errClusterLimit: no permit of the job's cluster limit came free in time.
var errClusterLimit = errors.New("scheduler: no permit of the job's cluster limit came free in time")

// takePermit takes a permit of r's job's cluster limit, if it has one,
// trying until the tick's late limit (for a manual run, its misfire grace
// from now) or until kept, the lease's kept context, is done; it returns
// why it could not.
func (s *Scheduler) takePermit(r *run, kept context.Context) error {
	e := r.e
	if e.cfg.limit == "" {
		return nil
	}
	deadline := r.info.Tick.Add(e.cfg.lateLimit())
	if r.info.Tick.IsZero() {
		deadline = s.cfg.clock().Add(e.cfg.misfireGrace)
	}
	ctx, cancel := context.WithTimeout(kept, deadline.Sub(s.cfg.clock()))
	defer cancel()
	req := LockRequest{Job: e.cfg.limit, TTL: e.cfg.lockTTL, Owner: s.cfg.instanceID, Permits: e.cfg.permits}
	for attempt := 1; ; attempt++ {
		p, err := s.locker.Acquire(ctx, req)
		if err == nil && p != nil {
			r.permit = p
			return nil
		}
		if errors.Is(err, mutex.ErrInvalidOption) { // asking again would not help
			return fmt.Errorf("%w: limit %q: %w", errClusterLimit, e.cfg.limit, err)
		}
		if ctx.Err() == nil {
			sleep(ctx, retryDelay(attempt))
		}
		switch {
		case kept.Err() != nil: // the lease lost meanwhile: not the limit's doing
			return context.Cause(kept)
		case ctx.Err() != nil:
			return fmt.Errorf("%w: limit %q: %v", errClusterLimit, e.cfg.limit, err)
		}
	}
}

// withPermit returns base, cancelled with its permit's loss too, if r
// holds a permit, and a function that stops watching the permit.
func withPermit(r *run, base context.Context) (context.Context, func()) {
	if r.permit == nil {
		return base, func() {}
	}
	kept := r.permit.Keep(context.WithoutCancel(base))
	ctx, cancel := context.WithCancelCause(base)
	stopWatch := context.AfterFunc(kept, func() { cancel(context.Cause(kept)) })
	return ctx, func() {
		stopWatch()
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
	_ = r.permit.Release(ctx, Outcome{}) // a permit not released expires with its TTL
}
