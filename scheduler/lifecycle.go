package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/duehook"
)

// stopGrace is how long Run and Shutdown wait for cancelled jobs to return
// before abandoning them (their leases are then released while they run).
const stopGrace = 5 * time.Second

// session is the state of one call of Run (a run is one execution of a job).
type session struct {
	// loopCtx ends the dispatching of ticks and pending lock attempts; it
	// is done when Shutdown is called or Run's context is done.
	loopCtx  context.Context
	stopLoop context.CancelFunc
	// jobCtx is the parent of every job's context; it is cancelled with
	// Run's context (and its cause) or with cause ErrShutdown.
	jobCtx     context.Context
	cancelJobs context.CancelCauseFunc
	// wg tracks the goroutines that handle ticks and triggered runs.
	wg sync.WaitGroup

	expired    chan struct{} // closed when Shutdown's context is done
	expireOnce sync.Once
	abandon    chan struct{} // closed when cancelled jobs did not return in time
	done       chan struct{} // closed when Run is about to return

	// Guarded by Scheduler.mu.
	stopped  bool // the loop has returned: no more goroutines may join wg
	shutdown bool // Shutdown was called

	// Written by Run before done is closed.
	abandoned bool
}

func newSession(ctx context.Context) *session {
	rn := &session{
		expired: make(chan struct{}),
		abandon: make(chan struct{}),
		done:    make(chan struct{}),
	}
	rn.loopCtx, rn.stopLoop = context.WithCancel(ctx)
	rn.jobCtx, rn.cancelJobs = context.WithCancelCause(ctx)
	return rn
}

// Run runs the scheduler until Shutdown is called, then returns ErrClosed,
// or until ctx is done, then returns ctx.Err(). It blocks.
//
// Cancelling ctx is a hard stop: running jobs' contexts are cancelled at
// once, with ctx's cause; Run waits for them to return, but at most 5s
// (jobs that do not return by then are abandoned: their goroutines keep
// running but their leases are released), releases their leases and
// returns. Use Shutdown to stop gracefully.
//
// Apart from abandoned jobs, no goroutine started by Run outlives it. Run
// returns ErrClosed if the Scheduler is closed, and an error if it is
// already running.
func (s *Scheduler) Run(ctx context.Context) error {
	rn, err := s.begin(ctx)
	if err != nil {
		return err
	}
	s.loop(rn)
	s.drain(ctx, rn)

	s.mu.Lock()
	s.session = nil
	s.closeLocked()
	shutdown := rn.shutdown
	s.mu.Unlock()
	rn.stopLoop()
	rn.cancelJobs(context.Canceled)
	s.log.LogAttrs(ctx, slog.LevelInfo, "scheduler stopped", slog.Bool("shutdown", shutdown))
	close(rn.done)
	if shutdown {
		return ErrClosed
	}
	return ctx.Err()
}

// begin switches the Scheduler to running and computes the first ticks.
func (s *Scheduler) begin(ctx context.Context) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case stateClosed:
		return nil, ErrClosed
	case stateRunning:
		return nil, errors.New("scheduler: Run called while running")
	}
	rn := newSession(ctx)
	s.session, s.state = rn, stateRunning
	if h := duehook.FromContext(ctx); h != nil {
		h.Set(s.due)
	}
	close(s.started)
	now := s.cfg.clock()
	for _, e := range s.jobs {
		e.next = firstTick(e, now)
		e.first = e.next
		e.at = s.dispatchAt(now, e.next)
	}
	s.log.LogAttrs(ctx, slog.LevelInfo, "scheduler started", slog.Int("jobs", len(s.jobs)))
	return rn, nil
}

// drain waits for the tick handlers and runs after the loop stopped. When
// Run's ctx or Shutdown's ctx is done, it cancels the jobs and waits at
// most stopGrace more before abandoning them.
func (s *Scheduler) drain(ctx context.Context, rn *session) {
	s.mu.Lock()
	rn.stopped = true
	s.mu.Unlock()

	idle := make(chan struct{})
	go func() {
		rn.wg.Wait()
		close(idle)
	}()
	select {
	case <-idle:
		return
	case <-ctx.Done():
		// A hard stop: the jobs' contexts derive from ctx.
	case <-rn.expired:
		rn.cancelJobs(ErrShutdown)
	}
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-idle:
		return
	case <-grace.C:
	}
	s.log.LogAttrs(ctx, slog.LevelWarn, "jobs ignored cancellation; abandoning them", slog.Duration("grace", stopGrace))
	rn.abandoned = true
	close(rn.abandon)
	<-idle // the handlers now only release the leases, with a timeout
}

// Shutdown stops the scheduler gracefully: no new tick is started and
// pending lock attempts are abandoned; Shutdown waits for running jobs, and
// for ticks whose lease is already won (ahead of the tick, with
// WithLockAhead, they run at their tick), until ctx is done, then cancels
// their contexts with cause ErrShutdown and waits at most 5s more for them
// to return. The leases are released as the jobs return, or abandoned
// jobs' leases once that wait is over (on a context detached from ctx, with
// a timeout). So Shutdown returns at most about 10s after ctx is done.
//
// Shutdown returns nil once every job returned, whether or not it had to
// cancel them, and an error matching ctx.Err() if some job ignored
// cancellation and was abandoned; its goroutine keeps running until it
// returns.
//
// After Shutdown the Scheduler is closed: Run returns ErrClosed. Shutdown
// may be called before Run, and more than once: a call made while Run is
// still returning waits as the first does; once Run has returned, a call
// returns nil at once (it does not repeat the first call's error).
func (s *Scheduler) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	rn := s.session
	if rn != nil {
		rn.shutdown = true
	}
	s.closeLocked()
	s.mu.Unlock()
	if rn == nil {
		return nil
	}
	rn.stopLoop()
	select {
	case <-rn.done:
	case <-ctx.Done():
		rn.expireOnce.Do(func() { close(rn.expired) })
		<-rn.done
	}
	if rn.abandoned {
		return fmt.Errorf("scheduler: jobs did not stop in time: %w", ctx.Err())
	}
	return nil
}

// closeLocked marks the Scheduler closed. s.mu must be held.
func (s *Scheduler) closeLocked() {
	if s.state != stateClosed {
		s.state = stateClosed
		close(s.closed)
	}
}
