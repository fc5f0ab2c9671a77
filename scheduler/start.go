package scheduler

import (
	"context"
	"fmt"
	"time"
)

// startAtTick keeps lease alive and starts d's run under it at d's tick,
// in a goroutine that waits for the tick if it is still to come: for the
// gate of its start group starts (see startGroup) if it is not nil, or
// else for a timer of its own. It returns the run once its job has
// started, and, if starts is not nil, the group's wait has ended. The wait
// for the tick goes on when the scheduler stops gracefully: the tick is
// claimed, and Shutdown waits for it as for a running job. If the tick is
// abandoned (see abandoned), or its job removed, or the lease lost before
// the tick or given up by a hard stop, the run does not start: startAtTick
// releases the lease and returns why.
func (s *Scheduler) startAtTick(rn *session, d dueTick, lease Lease, attempts int, starts *startGroup) (*run, error) {
	kept := lease.Keep(rn.jobCtx)
	r := s.newRun(d.e, lease, d.tick, d.tick, attempts)
	r.batch, r.slot = starts, d.slot
	var err error
	if starts == nil {
		s.launch(rn, r, kept, func() error {
			if err := s.waitTick(d, kept); err != nil {
				return err
			}
			return s.stillWanted(rn, d)
		})
		err = r.awaitStart()
	} else {
		s.launch(rn, r, kept, func() error {
			starts.wait()
			if !r.claim() {
				return errWithdrawn
			}
			return s.readyAtGate(rn, d, kept)
		})
		err = s.awaitGate(d, r, kept)
	}
	if err != nil {
		s.releaseUnused(rn, d.e.name, d.tick, lease)
		return nil, err
	}
	return r, nil
}

// waitTick waits for d's tick, if it is still to come, and returns nil; or
// why not: the lease's kept context done, or the tick abandoned (see
// abandoned). It goes on waiting when the scheduler stops gracefully.
func (s *Scheduler) waitTick(d dueTick, kept context.Context) error {
	wait := d.tick.Sub(s.cfg.clock())
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	for stop := d.ctx.Done(); ; {
		select {
		case <-t.C:
			return nil
		case <-kept.Done():
			return context.Cause(kept)
		case <-stop:
			if abandoned(d) {
				return errAbandonedEarly(d)
			}
			stop = nil // the scheduler is stopping: wait for the tick
		}
	}
}

// awaitGate is awaitStart for run r of d's tick, a member of a start group
// (see startAtTick). The run's goroutine waits for the group's gate alone,
// since a goroutine parked on one channel wakes at less cost than one in a
// select, which matters when hundreds wake at once on a few cores. Until
// the gate opens, awaitGate watches for what waitTick does instead, and
// withdraws r if its lease's kept context is done or its tick abandoned.
func (s *Scheduler) awaitGate(d dueTick, r *run, kept context.Context) error {
	lost, stop := kept.Done(), d.ctx.Done()
	for {
		select {
		case <-r.batch.all: // r started, or will not
			return r.awaitStart()
		case err := <-r.failed:
			return err
		case <-lost:
			lost = nil
			if r.withdraw() {
				return context.Cause(kept)
			}
		case <-stop:
			stop = nil // if the scheduler is stopping, wait for the tick
			if s.givenUp(d) && r.withdraw() {
				return errAbandonedEarly(d)
			}
		}
	}
}

// readyAtGate returns nil if d's run, its group's gate open, is to start,
// or else why not (see waitTick and stillWanted).
func (s *Scheduler) readyAtGate(rn *session, d dueTick, kept context.Context) error {
	switch {
	case kept.Err() != nil:
		return context.Cause(kept)
	case s.givenUp(d):
		return errAbandonedEarly(d)
	}
	return s.stillWanted(rn, d)
}

// stillWanted returns nil if d's run, its tick come, is still to start, or
// else why not: its job removed once the scheduler was stopping, or the
// scheduler stopped hard.
func (s *Scheduler) stillWanted(rn *session, d dueTick) error {
	switch {
	case d.e.removed.Load(): // removed once the scheduler was stopping
		return fmt.Errorf("scheduler: lease released: %w", errRemoved)
	case rn.jobCtx.Err() != nil:
		return fmt.Errorf("scheduler: lease given up: %w", context.Cause(rn.jobCtx))
	}
	return nil
}

// errAbandonedEarly returns the error of a run whose tick was abandoned
// before it came.
func errAbandonedEarly(d dueTick) error {
	return fmt.Errorf("scheduler: tick abandoned before it came, lease released: %w", context.Cause(d.ctx))
}

// sleepUntil waits until tick by the scheduler's clock, or until ctx is
// done, and reports whether it waited until tick.
func (s *Scheduler) sleepUntil(ctx context.Context, tick time.Time) bool {
	if wait := tick.Sub(s.cfg.clock()); wait > 0 {
		return sleep(ctx, wait)
	}
	return ctx.Err() == nil
}
