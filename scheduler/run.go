package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redcron/redcron/mutex"
)

// errGoexit is the error of a job that called runtime.Goexit.
var errGoexit = errors.New("scheduler: job called runtime.Goexit")

// releaseUnused releases a lease that no run will use.
func (s *Scheduler) releaseUnused(rn *session, job string, tick time.Time, lease Lease) {
	s.release(rn, lease, Outcome{}, func() []slog.Attr { return tickAttrs(job, tick) })
}

// release releases lease, recording o, within releaseTimeout whether or
// not the scheduler is stopping, and returns the error. A failure other
// than mutex.ErrLost is logged, with the attributes attrs returns.
func (s *Scheduler) release(rn *session, lease Lease, o Outcome, attrs func() []slog.Attr) error {
	ctx := context.WithoutCancel(rn.jobCtx)
	rctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	err := lease.Release(rctx, o)
	cancel()
	if err != nil && !errors.Is(err, mutex.ErrLost) {
		s.log.LogAttrs(ctx, slog.LevelWarn, "lease release failed; the lock expires with its TTL",
			append(attrs(), slog.Any("error", err))...)
	}
	return err
}

// run is one run of a job on this replica, from the lease's acquisition to
// its release.
type run struct {
	e        *entry
	lease    Lease
	info     RunInfo
	attempts int
	start    time.Time     // by the monotonic clock
	delay    time.Duration // from its tick to its start, by the scheduler's clock
	batch    *startGroup   // the group it starts with, or nil
	state    atomic.Int32  // runWaiting, runClaimed or runWithdrawn, if batch is not nil
	ctx      context.Context
	cancel   context.CancelCauseFunc // cancels ctx, under OverlapReplace (else nil); set before the job starts
	stopCtx  context.CancelFunc      // releases ctx's run timeout
	started  chan struct{}           // closed once the job has started
	failed   chan error              // why the job will not start; capacity 1
	done     chan outcome            // capacity 1, so that an abandoned job never blocks
	ended    atomic.Bool             // the run no longer counts as running (see end)
	tries    atomic.Int32            // tries of the job so far (WithRetry)
	slot     *slot                   // the run slot it frees when it ends, or nil
	permit   Lease                   // its permit of its job's cluster limit (WithClusterLimit), or nil
	triesMu  sync.Mutex
	tryErrs  []string // the errors of the tries tried again, for the ledger
}

// The states of a run that is a member of a start group.
const (
	runWaiting   = iota // for the group's gate
	runClaimed          // by its goroutine, the gate open: it starts, or fails to
	runWithdrawn        // by its handler: it will not start
)

// errWithdrawn is returned by the ready function of a run its handler
// withdrew (see awaitGate).
var errWithdrawn = errors.New("scheduler: run withdrawn before its tick")

// claim reports whether r, a member of a start group whose gate has
// opened, is to start, or fail to, in its goroutine: whether its handler
// did not withdraw it first.
func (r *run) claim() bool { return r.state.CompareAndSwap(runWaiting, runClaimed) }

// withdraw reports whether r, a member of a start group, will not start,
// as its goroutine did not claim it first, and then marks it done in its
// group.
func (r *run) withdraw() bool {
	if !r.state.CompareAndSwap(runWaiting, runWithdrawn) {
		return false
	}
	r.batch.done()
	return true
}

// awaitStart waits until r's job has started and returns nil, or returns
// why it will not start.
func (r *run) awaitStart() error {
	select {
	case <-r.started:
		return nil
	case err := <-r.failed:
		return err
	}
}

// outcome is how a job returned.
type outcome struct {
	err       error     // the job's error, or a *PanicError
	cause     error     // context.Cause of the job's context when it returned
	abandoned bool      // the job did not return within stopGrace of its cancellation
	returned  time.Time // when the job returned (monotonic)
}

// newRun returns a run of e on this replica, for tick (zero for a manual
// run), under lease, won in attempts attempts; its RunID's time is idTime.
// Its job is started by launch. The RunID is drawn here, when the lease is
// won (with lock-ahead, before the tick), so that the start itself does
// not wait for the system's random source.
func (s *Scheduler) newRun(e *entry, lease Lease, tick, idTime time.Time, attempts int) *run {
	return &run{
		e:        e,
		lease:    lease,
		attempts: attempts,
		info: RunInfo{
			Job:      e.name,
			Tick:     tick,
			Fence:    lease.Fence(),
			RunID:    newRunID(idTime),
			Instance: s.cfg.instanceID,
			Try:      1,
		},
		started: make(chan struct{}),
		failed:  make(chan error, 1),
		done:    make(chan outcome, 1),
	}
}

// startRun starts a manual run of e under lease at once, in run slot sl,
// and returns it, or why it did not start (no permit of its job's cluster
// limit in time).
func (s *Scheduler) startRun(rn *session, e *entry, lease Lease, attempts int, sl *slot) (*run, error) {
	r := s.newRun(e, lease, time.Time{}, s.cfg.clock(), attempts)
	r.slot = sl
	s.launch(rn, r, lease.Keep(rn.jobCtx), nil)
	if err := r.awaitStart(); err != nil {
		return nil, err
	}
	return r, nil
}

// launch starts r's goroutine, which closes r.started once r's job has
// started, or sends why it did not start on r.failed, and then marks r
// done in its start group. kept is the context returned by the lease's
// Keep. The goroutine first calls ready, if it is not nil, and does not
// start the job if ready returns an error. It is not in rn.wg: the handler
// that called launch waits for it, except when it abandons a job that
// ignores cancellation. The job's context, but for its run timeout, is
// built here, before the goroutine waits for the tick, with r.cancel under
// OverlapReplace.
func (s *Scheduler) launch(rn *session, r *run, kept context.Context, ready func() error) {
	base := contextWithRunInfo(kept, &r.info)
	if r.e.cfg.overlap == OverlapReplace {
		base, r.cancel = context.WithCancelCause(base)
	}
	go func() {
		if r.cancel != nil {
			defer r.cancel(nil)
		}
		var err error
		if ready != nil {
			if err = ready(); err == nil {
				err = outlived(kept)
			}
		}
		if err == nil {
			err = s.takePermit(r, kept)
		}
		if err == nil && r.permit != nil { // the wait for it may have outlived the lease
			if err = outlived(kept); err == nil && kept.Err() != nil {
				err = context.Cause(kept)
			}
			if err != nil {
				r.releasePermit()
			}
		}
		if err != nil {
			if err == errWithdrawn { // its handler has dealt with it
				return
			}
			r.failed <- err
			r.batch.done()
			return
		}
		base, unwatch := withPermit(r, base)
		s.markStart(rn, r, base)
		close(r.started) // wakes no handler waiting for its group
		r.batch.done()
		out := outcome{err: errGoexit}
		defer func() {
			out.cause, out.returned = context.Cause(r.ctx), time.Now()
			r.stopCtx()
			unwatch()
			r.releasePermit()
			s.end(r, out, nil, false)
			r.done <- out
		}()
		out.err = s.tryJob(rn.loopCtx, r)
	}()
}

// validityKey is the key under which a lease's kept context carries when
// its validity ends (func() time.Time; redlockLease.Keep).
type validityKey struct{}

// outlived returns why a run of the lease kept with kept must not start:
// its validity ended, though the keepalive, whose timer a busy process
// runs late, has not cancelled kept yet; nil otherwise, or for a Locker
// whose leases do not say.
func outlived(kept context.Context) error {
	until, ok := kept.Value(validityKey{}).(func() time.Time)
	if !ok {
		return nil
	}
	if late := time.Since(until()); late >= 0 {
		return fmt.Errorf("%w: its validity ended %v before its run could start", mutex.ErrLost, late)
	}
	return nil
}

// markStart records r's start and builds its job's context from base, the
// lease's kept context with r's RunInfo.
func (s *Scheduler) markStart(rn *session, r *run, base context.Context) {
	e, tick := r.e, r.info.Tick
	e.latest.Store(r) // first: a tick that sees the run running may replace it
	e.running.Add(1)

	r.start = time.Now()
	var startDelay time.Duration
	if !tick.IsZero() {
		wall := r.start // one reading of the clock with the default one
		if s.cfg.ownClock {
			wall = s.cfg.clock()
		}
		startDelay = wall.Sub(tick)
	}
	r.delay = startDelay
	s.emit(e, Event{Kind: KindRunStarted, Job: e.name, Tick: tick, RunID: r.info.RunID, Fence: r.info.Fence,
		StartDelay: startDelay, Attempts: r.attempts})
	if s.log.Enabled(rn.jobCtx, slog.LevelDebug) {
		s.log.LogAttrs(rn.jobCtx, slog.LevelDebug, "run started", r.attrs(slog.Duration("start_delay", startDelay))...)
	}

	r.ctx, r.stopCtx = base, func() {}
	if d := e.cfg.runTimeout; d > 0 {
		r.ctx, r.stopCtx = context.WithTimeoutCause(base, d, ErrRunTimeout)
	}
}

// callJob runs job, turning a panic into a *PanicError.
func callJob(ctx context.Context, job JobFunc, info RunInfo) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Job: info.Job, Value: v, Stack: debug.Stack()}
		}
	}()
	return job(ctx, info)
}

// finishRun waits for r's job to return, or to be abandoned, releases the
// lease and reports the result.
func (s *Scheduler) finishRun(rn *session, r *run) {
	var out outcome
	select {
	case out = <-r.done: // a job that returned is never reported abandoned
	default:
		select {
		case out = <-r.done:
		case <-rn.abandon:
			out = outcome{cause: context.Cause(r.ctx), abandoned: true}
		}
	}
	duration := time.Since(r.start)
	if !out.returned.IsZero() {
		duration = out.returned.Sub(r.start) // the job's own time, without waiting for its group
	}
	ledger, ledgerErr := classify(out, nil) // the lease's own loss is the ledger's to tell
	relErr := s.release(rn, r.lease, Outcome{RunID: r.info.RunID, Result: ledger, Err: r.ledgerErr(ledgerErr), Try: int(r.tries.Load()), Delay: r.delay},
		func() []slog.Attr { return r.attrs() })
	result, err := s.end(r, out, relErr, true)
	s.emit(r.e, Event{Kind: KindRunFinished, Job: r.info.Job, Tick: r.info.Tick, RunID: r.info.RunID,
		Fence: r.info.Fence, Result: result, Duration: duration, Attempts: r.attempts, Try: int(r.tries.Load()), Err: err})

	s.logRun(context.WithoutCancel(rn.jobCtx), r, result, duration, err)
}

// end records that r's job returned (final false, from its goroutine), or
// that its lease was released (final true, from its handler). The first
// call takes the run off the running count and records its result, so
// that Entries and Trigger see a finished run as finished at once, even
// while its lease is kept for its start group. The release's call records
// the result again, now knowing whether the lease was lost (relErr), and
// wakes the ticks waiting for the release (see releaseSignal); a job that
// returns after it was abandoned changes nothing.
func (s *Scheduler) end(r *run, out outcome, relErr error, final bool) (string, error) {
	result, err := classify(out, relErr)
	s.mu.Lock()
	defer s.mu.Unlock()
	if final && r.e.released != nil {
		close(r.e.released)
		r.e.released = nil
	}
	first := r.ended.CompareAndSwap(false, true)
	if first {
		r.e.running.Add(-1)
		r.slot.free()
	}
	if (first || final) && r.e.latest.Load() == r { // not over a newer run's result
		r.e.lastResult, r.e.lastSkip, r.e.lastErr = result, "", err
	}
	return result, err
}

// logRun logs the end of run r. Its attributes are built only if the
// logger takes the record: with thousands of runs a tick, they would cost
// the CPU the other runs' starts need.
func (s *Scheduler) logRun(ctx context.Context, r *run, result string, duration time.Duration, err error) {
	level, msg := slog.LevelError, "run failed"
	switch result {
	case resultSuccess:
		level, msg = slog.LevelInfo, "run finished"
	case resultCanceled:
		level, msg = slog.LevelWarn, "run canceled"
		if errors.Is(err, ErrReplaced) {
			level, msg = slog.LevelInfo, "run canceled: replaced by a newer tick"
		}
	case resultAbandoned:
		level, msg = slog.LevelError, "run abandoned: the job ignored its context's cancellation"
	}
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := r.attrs(slog.String("result", result), slog.Duration("duration", duration))
	if result != resultSuccess {
		attrs = append(attrs, slog.Any("error", err))
	}
	if pe, ok := err.(*PanicError); ok && result == resultPanic {
		attrs = append(attrs, slog.String("stack", string(pe.Stack)))
	}
	s.log.LogAttrs(ctx, level, msg, attrs...)
}

// classify turns how a job returned, and how its lease was released, into
// a Result and the error to report.
// A lease found lost at the release after the scheduler stopped the job
// (Shutdown, Run's context) was lost because the keepalive stopped with
// the job's context, not because of the nodes: the run is reported as
// canceled, or abandoned, not as lock_lost. A run timeout does not stop
// the keepalive, so a loss after it is one.
func classify(out outcome, releaseErr error) (string, error) {
	switch {
	case errors.Is(out.cause, mutex.ErrLost):
		return resultLockLost, withCause(out.cause, out.err)
	case out.abandoned:
		return resultAbandoned, fmt.Errorf("scheduler: the job did not stop in time: %w", out.cause)
	case (out.cause == nil || errors.Is(out.cause, ErrRunTimeout)) && errors.Is(releaseErr, mutex.ErrLost):
		return resultLockLost, withCause(releaseErr, out.err)
	}
	if _, ok := out.err.(*PanicError); ok {
		return resultPanic, out.err
	}
	switch {
	case out.err == nil:
		return resultSuccess, nil
	case errors.Is(out.cause, ErrRunTimeout):
		return resultTimeout, withCause(out.cause, out.err)
	case out.cause != nil:
		return resultCanceled, withCause(out.cause, out.err)
	default:
		return resultFailure, out.err
	}
}

// withCause returns cause, annotated with the job's error if there is a
// different one.
func withCause(cause, jobErr error) error {
	if jobErr == nil || errors.Is(jobErr, cause) {
		return cause
	}
	return fmt.Errorf("%w (job returned: %w)", cause, jobErr)
}

func (r *run) attrs(extra ...slog.Attr) []slog.Attr {
	return append(tickAttrs(r.info.Job, r.info.Tick,
		slog.String("run_id", r.info.RunID), slog.Uint64("fence", r.info.Fence)), extra...)
}
