package scheduler

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/redcron/redcron/internal/ticket"
)

// Trigger runs the job called name once, now, under its lock, so that it
// never runs at the same time as a tick or another trigger of the job on
// any replica. It claims no tick. It returns once the run has started,
// with its RunInfo; the job runs in the background like a scheduled run.
// ctx bounds only the wait for Run (if not started yet), for a run slot
// (WithMaxConcurrentRuns: the run takes one of this replica's, first) and
// for the lock, whose undecided attempts are retried for up to the job's
// misfire grace.
//
// Errors: ErrUnknownJob at once for a name no job has (or one removed
// meanwhile); ErrOverlap if this replica runs the job or holds its lock;
// mutex.ErrHeld if another replica holds it; mutex.ErrNoQuorum if no decision was
// reached (or, for a request of the admin command's, which the front door
// takes, the request was taken by another replica or withdrawn); ErrClosed
// once the Scheduler is closed.
func (s *Scheduler) Trigger(ctx context.Context, name string) (RunInfo, error) {
	// The front door's requests come with a ticket (LockRequest.Ticket),
	// which the Redlock's Locker runs only if its lease takes it.
	tc := triggerConfig{ticket: ticket.FromContext(ctx)}
	rn, e, err := s.triggerable(ctx, name)
	if err != nil {
		return RunInfo{}, err
	}

	// Stop trying when the Scheduler stops, or the job is removed.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(rn.loopCtx, cancel)()
	defer context.AfterFunc(e.gone, cancel)()
	removed := fmt.Errorf("%w: %q: removed while it was being triggered", ErrUnknownJob, name)
	req := LockRequest{Job: name, TTL: e.cfg.lockTTL, Owner: s.cfg.instanceID, Ticket: tc.ticket}
	sl, err := s.triggerSlot(ctx, rn, e, tc.ticket != "")
	if err != nil {
		return RunInfo{}, err
	}
	deadline := s.cfg.clock().Add(e.cfg.misfireGrace)
	if tc.ticket != "" {
		deadline = s.cfg.clock() // one attempt: a request not taken now is tried again by its taker
	}
	lease, attempts, err := s.acquire(ctx, e, req, deadline, nil)
	if err != nil {
		sl.free()
		switch {
		case rn.loopCtx.Err() != nil:
			return RunInfo{}, ErrClosed
		case e.removed.Load():
			return RunInfo{}, removed
		}
		return RunInfo{}, fmt.Errorf("scheduler: trigger job %q: %w", name, err)
	}
	sl.settle()

	return s.runTriggered(rn, e, lease, attempts, sl, removed)
}

// runTriggered starts the run of a trigger of e whose lease was won, in
// run slot sl, and returns its RunInfo once it started, or why it did not:
// the scheduler stopped (ErrClosed), the job removed (removed), or no
// permit of its cluster limit in time.
func (s *Scheduler) runTriggered(rn *session, e *entry, lease Lease, attempts int, sl *slot, removed error) (RunInfo, error) {
	name := e.name
	s.mu.Lock()
	switch {
	case rn.stopped || rn.loopCtx.Err() != nil:
		s.mu.Unlock()
		sl.free()
		s.releaseUnused(rn, name, time.Time{}, lease) // the run never started
		return RunInfo{}, ErrClosed
	case e.removed.Load(): // set under s.mu: no run starts after Remove
		s.mu.Unlock()
		sl.free()
		s.releaseUnused(rn, name, time.Time{}, lease)
		return RunInfo{}, removed
	}
	started, failed := make(chan RunInfo, 1), make(chan error, 1)
	rn.wg.Go(func() {
		defer sl.free() // if the run was abandoned
		r, err := s.startRun(rn, e, lease, attempts, sl)
		if err != nil {
			s.releaseUnused(rn, name, time.Time{}, lease) // the run never started
			failed <- err
			return
		}
		started <- r.info
		s.finishRun(rn, r)
	})
	s.mu.Unlock()
	select {
	case info := <-started:
		return info, nil
	case err := <-failed:
		return RunInfo{}, fmt.Errorf("scheduler: trigger job %q: %w", name, err)
	}
}

// triggerable waits for Run, if the job called name exists, and returns
// Run's session and the job, or why it cannot be triggered now.
func (s *Scheduler) triggerable(ctx context.Context, name string) (*session, *entry, error) {
	s.mu.Lock()
	known := s.jobs[name] != nil
	s.mu.Unlock()
	if !known { // before Run too: waiting could not make the name known
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknownJob, name)
	}
	select {
	case <-s.started:
	case <-s.closed:
		return nil, nil, ErrClosed
	case <-ctx.Done():
		return nil, nil, context.Cause(ctx)
	}
	s.mu.Lock()
	rn, e := s.session, s.jobs[name]
	running := e != nil && e.running.Load() > 0
	s.mu.Unlock()
	switch {
	case rn == nil:
		return nil, nil, ErrClosed
	case e == nil:
		return nil, nil, fmt.Errorf("%w: %q", ErrUnknownJob, name)
	case running:
		return nil, nil, fmt.Errorf("scheduler: trigger job %q: %w", name, ErrOverlap)
	}
	return rn, e, nil
}

// triggerSlot takes a run slot (WithMaxConcurrentRuns) for a Trigger of
// e, waiting for one until ctx is done, or, for a request of the front
// door's (ticket), not at all: another replica may take it now. It
// returns the slot, nil if there is no limit, or why it got none.
func (s *Scheduler) triggerSlot(ctx context.Context, rn *session, e *entry, ticket bool) (*slot, error) {
	wait := time.Duration(math.MaxInt64)
	if ticket {
		wait = 0
	}
	if sl, ok := s.limit.take(ctx, wait, wait); ok {
		return sl, nil
	}
	switch {
	case rn.loopCtx.Err() != nil:
		return nil, ErrClosed
	case e.removed.Load():
		return nil, fmt.Errorf("%w: %q: removed while it was being triggered", ErrUnknownJob, e.name)
	case ctx.Err() != nil:
		return nil, fmt.Errorf("scheduler: trigger job %q: waiting for one of the %d run slots of this replica: %w",
			e.name, s.cfg.maxRuns, context.Cause(ctx))
	}
	return nil, fmt.Errorf("scheduler: trigger job %q: the %d run slots of this replica are taken", e.name, s.cfg.maxRuns)
}

type triggerConfig struct {
	ticket string
}
