package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync/atomic"
	"time"
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

// errGoexit is the error of a job that called runtime.Goexit.
var errGoexit = errors.New("scheduler: job called runtime.Goexit")

// handleTick handles one tick of one job: it checks that the tick is not
// late and that the job is not running here, acquires the lease and runs
// the job at the tick.
func (s *Scheduler) handleTick(rn *runner, d dueTick) {
	defer d.cancel(nil)
	req, v := s.checkTick(d, true)
	if v == tickLater {
		if !s.sleepUntil(d.ctx, d.tick) {
			s.lockFailed(rn, d, 0, context.Cause(d.ctx))
			return
		}
		req, v = s.checkTick(d, false)
	}
	if v != tickGo {
		return
	}
	s.lockAndRun(rn, d, req, nil)
}

// handleBatch handles ticks of several jobs that came due together, with a
// BatchLocker: it checks each tick as handleTick does, makes the first lock
// attempt of the remaining ones in one call of AcquireAll, then goes on for
// each tick as handleTick does after its first attempt: a run or an
// undecided attempt's retries in a goroutine of its own, a refusal here.
func (s *Scheduler) handleBatch(rn *runner, bl BatchLocker, due []dueTick) {
	var (
		ticks []dueTick
		reqs  []LockRequest
	)
	for _, d := range due {
		switch req, v := s.checkTick(d, true); v {
		case tickGo:
			ticks = append(ticks, d)
			reqs = append(reqs, req)
		case tickLater:
			rn.wg.Go(func() { s.handleTick(rn, d) })
		default:
			d.cancel(nil)
		}
	}
	switch len(ticks) {
	case 0:
		return
	case 1:
		defer ticks[0].cancel(nil)
		s.lockAndRun(rn, ticks[0], reqs[0], nil)
		return
	}

	// The longest of the attempts' bounds: a batch takes longer than one
	// lock, and a lock won too late for its TTL is refused by the locker
	// (its validity has run out), not cut short for the others.
	var timeout time.Duration
	for _, req := range reqs {
		timeout = max(timeout, attemptTimeout(req.TTL))
	}
	ctx, cancel := context.WithTimeout(rn.loopCtx, timeout)
	results := bl.AcquireAll(ctx, reqs)
	cancel()
	results = s.alignResults(rn, results, len(reqs))

	starts := startGroups(ticks, results, s.cfg.clock())
	for i, d := range ticks {
		first := results[i]
		d.starts = starts[i]
		d.member = first.won()
		if refused(first.Err) && !s.askAgain(d.tick, first.Err) {
			// Decided: acquire returns at once, and lockFailed reports it.
			s.lockAndRun(rn, d, reqs[i], &first)
			d.cancel(nil)
			continue
		}
		rn.wg.Go(func() {
			defer d.cancel(nil)
			s.lockAndRun(rn, d, reqs[i], &first)
		})
	}
}

// alignResults returns n results: those of a BatchLocker that returned
// one per request, or else its first n results, completed with errors for
// the missing ones; it releases the leases of any results beyond n.
func (s *Scheduler) alignResults(rn *runner, results []LockResult, n int) []LockResult {
	if len(results) == n {
		return results
	}
	for _, r := range results[min(n, len(results)):] {
		if r.Lease != nil {
			s.releaseUnused(rn, "", time.Time{}, r.Lease)
		}
	}
	out := make([]LockResult, n)
	copy(out, results)
	err := fmt.Errorf("scheduler: BatchLocker returned %d results for %d requests", len(results), n)
	for i := len(results); i < n; i++ {
		out[i].Err = err
	}
	return out
}

// tickVerdict is checkTick's answer.
type tickVerdict int

const (
	tickSkip  tickVerdict = iota // the tick is skipped (and reported)
	tickGo                       // go on with the tick's lock attempts
	tickLater                    // check again at the tick
)

// checkTick records d's tick as handled and checks that it is not later
// than its grace and that its job is not running here; if so, it returns
// the tick's lock request. Otherwise it reports the tick as skipped, except
// that, if recheck is true, a tick dispatched ahead (WithLockAhead) while
// its job runs here is to be checked again at the tick, when the run may be
// over.
func (s *Scheduler) checkTick(d dueTick, recheck bool) (LockRequest, tickVerdict) {
	e, tick := d.e, d.tick
	s.mu.Lock()
	e.prev = tick
	running := e.running.Load() > 0
	s.mu.Unlock()

	late := s.cfg.clock().Sub(tick)
	if late > e.cfg.lateLimit() {
		s.skip(e, tick, SkipMisfire, 0, nil)
		s.log.LogAttrs(d.ctx, slog.LevelWarn, "tick skipped: later than its grace",
			tickAttrs(e.name, tick, slog.Duration("late", late))...)
		return LockRequest{}, tickSkip
	}
	if running {
		if recheck && late < 0 {
			return LockRequest{}, tickLater
		}
		s.skip(e, tick, SkipOverlap, 0, nil)
		s.log.LogAttrs(d.ctx, slog.LevelDebug, "tick skipped: previous run still going here",
			tickAttrs(e.name, tick)...)
		return LockRequest{}, tickSkip
	}
	return LockRequest{Job: e.name, Tick: tick, TTL: e.cfg.lockTTL, Owner: s.cfg.instanceID}, tickGo
}

// askAgain reports whether a refusal err of a lock attempt for tick is to
// be asked again at the tick: an overlap found ahead of the tick, as the
// previous run may be over by then.
func (s *Scheduler) askAgain(tick time.Time, err error) bool {
	return errors.Is(err, ErrOverlap) && tick.After(s.cfg.clock())
}

// lockAndRun acquires the lease of req for d's tick and runs the job at the
// tick, or reports why the tick was not run. first, if not nil, is the
// result of a first attempt already made in a batch. A tick attempted ahead
// of time whose previous run is still going, or whose lease is lost before
// the tick, is attempted again, once, at the tick. A lease won is run even
// if the scheduler is stopping (Shutdown waits for it), unless the job was
// removed or a newer tick came. It does not call d.cancel.
func (s *Scheduler) lockAndRun(rn *runner, d dueTick, req LockRequest, first *LockResult) {
	e, tick := d.e, d.tick
	total := 0
	var lost error         // why a lease won ahead was lost before the tick
	var starts *startGroup // the group the run is a member of
	if d.member {
		starts = d.starts
	}
	defer func() { starts.done() }() // if the batch's lease ends without a run
	for again := true; ; again = false {
		lease, attempts, err := s.acquire(d.ctx, e, req, tick.Add(e.cfg.lateLimit()), first)
		total += attempts
		if err == nil && first != nil && attempts == 1 && abandoned(d) {
			// The batch's attempt was not bounded by d.ctx: the job was
			// removed, or a newer tick came, while its lease was being won.
			s.releaseUnused(rn, e.name, tick, lease)
			err = fmt.Errorf("scheduler: lease won after the tick was abandoned, released: %w", context.Cause(d.ctx))
		}
		first = nil
		switch {
		case err == nil:
			if starts == nil && d.starts.join() {
				starts = d.starts // won by a retry, before the gate opened
			}
			r, lerr := s.startAtTick(rn, d, lease, total, starts)
			starts = nil // the run marked itself done in its group
			if lerr == nil {
				s.finishRun(rn, r)
				return
			}
			if abandoned(d) || errors.Is(lerr, errRemoved) {
				s.lockFailed(rn, d, total, lerr)
				return
			}
			lost = lerr
			if !again || rn.jobCtx.Err() != nil {
				s.leaseLost(d, total, lost)
				return
			}
			s.log.LogAttrs(d.ctx, slog.LevelWarn, "lease lost before its tick; trying again at the tick",
				tickAttrs(e.name, tick, slog.Any("error", lost))...)
		case lost != nil && errors.Is(err, ErrHeld):
			// Another replica won the tick (the lost lease's mark had not
			// reached a majority): it runs it.
			s.lockFailed(rn, d, total, err)
			return
		case lost != nil:
			// Most often refused by the tick's own mark, set when the lost
			// lease was won.
			s.leaseLost(d, total, errors.Join(lost, err))
			return
		case !again || !s.askAgain(tick, err):
			s.lockFailed(rn, d, total, err)
			return
		}
		if !s.sleepUntil(d.ctx, tick) {
			if lost != nil {
				s.leaseLost(d, total, lost)
				return
			}
			s.lockFailed(rn, d, total, context.Cause(d.ctx))
			return
		}
	}
}

// abandoned reports whether d's tick was abandoned: its job removed, or a
// newer tick of it dispatched.
func abandoned(d dueTick) bool {
	cause := context.Cause(d.ctx)
	return errors.Is(cause, errRemoved) || errors.Is(cause, errNewerTick)
}

// leaseLost reports a tick whose lease was lost before its run started
// (with lock-ahead, before the tick), or given up by a hard stop.
func (s *Scheduler) leaseLost(d dueTick, attempts int, err error) {
	s.skip(d.e, d.tick, SkipLeaseLost, attempts, err)
	s.log.LogAttrs(d.ctx, slog.LevelWarn, "tick skipped: its lease was lost, or given up, before its run started",
		tickAttrs(d.e.name, d.tick, slog.Any("error", err))...)
}

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
func (s *Scheduler) startAtTick(rn *runner, d dueTick, lease Lease, attempts int, starts *startGroup) (*run, error) {
	kept := lease.Keep(rn.jobCtx)
	r := s.newRun(d.e, lease, d.tick, d.tick, attempts)
	r.batch = starts
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
			if abandoned(d) && r.withdraw() {
				return errAbandonedEarly(d)
			}
		}
	}
}

// readyAtGate returns nil if d's run, its group's gate open, is to start,
// or else why not (see waitTick and stillWanted).
func (s *Scheduler) readyAtGate(rn *runner, d dueTick, kept context.Context) error {
	switch {
	case kept.Err() != nil:
		return context.Cause(kept)
	case abandoned(d):
		return errAbandonedEarly(d)
	}
	return s.stillWanted(rn, d)
}

// stillWanted returns nil if d's run, its tick come, is still to start, or
// else why not: its job removed once the scheduler was stopping, or the
// scheduler stopped hard.
func (s *Scheduler) stillWanted(rn *runner, d dueTick) error {
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

// releaseUnused releases a lease that no run will use.
func (s *Scheduler) releaseUnused(rn *runner, job string, tick time.Time, lease Lease) {
	s.release(rn, lease, func() []slog.Attr { return tickAttrs(job, tick) })
}

// release releases lease, within releaseTimeout whether or not the
// scheduler is stopping, and returns the error. A failure other than
// ErrLockLost is logged, with the attributes attrs returns.
func (s *Scheduler) release(rn *runner, lease Lease, attrs func() []slog.Attr) error {
	ctx := context.WithoutCancel(rn.jobCtx)
	rctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	err := lease.Release(rctx)
	cancel()
	if err != nil && !errors.Is(err, ErrLockLost) {
		s.log.LogAttrs(ctx, slog.LevelWarn, "lease release failed; the lock expires with its TTL",
			append(attrs(), slog.Any("error", err))...)
	}
	return err
}

// lockFailed reports a tick that could not be locked.
func (s *Scheduler) lockFailed(rn *runner, d dueTick, attempts int, err error) {
	e, tick := d.e, d.tick
	var reason SkipReason
	switch {
	case errors.Is(context.Cause(d.ctx), errRemoved):
		// Whatever the answer, the job is gone: nothing to report.
		s.log.LogAttrs(d.ctx, slog.LevelDebug, "tick abandoned: job removed",
			tickAttrs(e.name, tick, slog.Any("error", err))...)
		return
	case errors.Is(err, ErrHeld):
		reason = SkipHeld
	case errors.Is(err, ErrAlreadyRun):
		reason = SkipAlreadyRun
	case errors.Is(err, ErrOverlap):
		reason = SkipOverlap
	case rn.loopCtx.Err() != nil:
		s.log.LogAttrs(d.ctx, slog.LevelDebug, "tick abandoned: scheduler stopping",
			tickAttrs(e.name, tick, slog.Any("error", err))...)
		return
	default:
		if errors.Is(context.Cause(d.ctx), errNewerTick) {
			err = fmt.Errorf("%w (retries ended: %w)", err, errNewerTick)
		}
		s.skip(e, tick, SkipNoQuorum, attempts, err)
		s.logNoDecision(d.ctx, e, tick, attempts, err)
		return
	}
	s.skip(e, tick, reason, attempts, nil)
	if s.log.Enabled(d.ctx, slog.LevelDebug) { // refusals come by the thousand with many jobs
		s.log.LogAttrs(d.ctx, slog.LevelDebug, "tick skipped",
			tickAttrs(e.name, tick, slog.String("reason", reason.String()))...)
	}
}

// logNoDecision logs a tick skipped for want of a lock decision: as a
// warning at most once a minute per job, saying how many were skipped
// since, and otherwise at debug level. While nodes are down every tick of
// every job is skipped alike; the Redlock logs the nodes' states as they
// change.
func (s *Scheduler) logNoDecision(ctx context.Context, e *entry, tick time.Time, attempts int, err error) {
	s.mu.Lock()
	level, quiet := slog.LevelDebug, 0
	if now := time.Now(); now.Sub(e.warned) >= time.Minute {
		level, quiet, e.warned, e.unwarned = slog.LevelWarn, e.unwarned, now, 0
	} else {
		e.unwarned++
	}
	s.mu.Unlock()
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := tickAttrs(e.name, tick, slog.Int("attempts", attempts), slog.Any("error", err))
	if level == slog.LevelWarn && quiet > 0 {
		attrs = append(attrs, slog.Int("skipped_since_last_warning", quiet))
	}
	s.log.LogAttrs(ctx, level, "tick skipped: no lock decision", attrs...)
}

// skip records and reports a skipped tick, unless its job was removed: it
// is reported under the lock, as Remove reports the removal, so that no
// skip of a job follows EventJobRemoved.
func (s *Scheduler) skip(e *entry, tick time.Time, reason SkipReason, attempts int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.removed.Load() {
		return
	}
	e.lastResult, e.lastSkip, e.lastErr = 0, reason, err
	s.emit(Event{Kind: EventSkipped, Job: e.name, Tick: tick, Skip: reason, Attempts: attempts, Err: err})
}

// acquire makes lock attempts for req until one wins, one gets a definite
// refusal (ErrHeld, ErrAlreadyRun, ErrOverlap), or ctx is done. Undecided
// attempts are retried after a random delay, as long as the retry starts
// before the deadline (by the scheduler's clock); the first attempt is
// always made, or, if first is not nil, was already made (in a batch) with
// that result. It returns the number of attempts made.
func (s *Scheduler) acquire(ctx context.Context, e *entry, req LockRequest, deadline time.Time, first *LockResult) (Lease, int, error) {
	retryUntil := time.Now().Add(deadline.Sub(s.cfg.clock())) // by the monotonic clock
	var lastErr error
	for attempt := 1; ; attempt++ {
		var (
			lease Lease
			err   error
		)
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
		s.emit(Event{Kind: EventLockRetry, Job: e.name, Tick: req.Tick, Attempts: attempt, Err: err})
		s.log.LogAttrs(ctx, slog.LevelDebug, "lock attempt undecided; retrying",
			tickAttrs(e.name, req.Tick, slog.Int("attempt", attempt), slog.Duration("delay", delay), slog.Any("error", err))...)
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
	return errors.Is(err, ErrHeld) || errors.Is(err, ErrAlreadyRun) || errors.Is(err, ErrOverlap)
}

// retryDelay returns a random delay before the attempt after attempt.
func retryDelay(attempt int) time.Duration {
	hi := retryCap
	if attempt < 8 {
		hi = min(retryFirstMax<<(attempt-1), retryCap)
	}
	return retryMin + rand.N(hi-retryMin+1)
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

// run is one run of a job on this replica, from the lease's acquisition to
// its release.
type run struct {
	e        *entry
	lease    Lease
	info     RunInfo
	attempts int
	start    time.Time    // by the monotonic clock
	batch    *startGroup  // the group it starts with, or nil
	state    atomic.Int32 // runWaiting, runClaimed or runWithdrawn, if batch is not nil
	ctx      context.Context
	stopCtx  context.CancelFunc // releases ctx's run timeout
	started  chan struct{}      // closed once the job has started
	failed   chan error         // why the job will not start; capacity 1
	done     chan outcome       // capacity 1, so that an abandoned job never blocks
	ended    atomic.Bool        // the run no longer counts as running (see end)
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
		},
		started: make(chan struct{}),
		failed:  make(chan error, 1),
		done:    make(chan outcome, 1),
	}
}

// startRun starts a manual run of e under lease at once and returns it.
func (s *Scheduler) startRun(rn *runner, e *entry, lease Lease, attempts int) *run {
	r := s.newRun(e, lease, time.Time{}, s.cfg.clock(), attempts)
	s.launch(rn, r, lease.Keep(rn.jobCtx), nil)
	<-r.started // there is no ready to fail
	return r
}

// launch starts r's goroutine, which closes r.started once r's job has
// started, or sends why it did not start on r.failed, and then marks r
// done in its start group. kept is the context returned by the lease's
// Keep. The goroutine first calls ready, if it is not nil, and does not
// start the job if ready returns an error. It is not in rn.wg: the handler
// that called launch waits for it, except when it abandons a job that
// ignores cancellation. The job's context, but for its run timeout, is
// built here, before the goroutine waits for the tick.
func (s *Scheduler) launch(rn *runner, r *run, kept context.Context, ready func() error) {
	base := contextWithRunInfo(kept, &r.info)
	go func() {
		if ready != nil {
			if err := ready(); err != nil {
				if err == errWithdrawn { // its handler has dealt with it
					return
				}
				r.failed <- err
				r.batch.done()
				return
			}
		}
		s.markStart(rn, r, base)
		close(r.started) // wakes no handler waiting for its group
		r.batch.done()
		out := outcome{err: errGoexit}
		defer func() {
			out.cause, out.returned = context.Cause(r.ctx), time.Now()
			r.stopCtx()
			s.end(r, out, nil, false)
			r.done <- out
		}()
		out.err = callJob(r.ctx, r.e.job, r.info)
	}()
}

// markStart records r's start and builds its job's context from base, the
// lease's kept context with r's RunInfo.
func (s *Scheduler) markStart(rn *runner, r *run, base context.Context) {
	e, tick := r.e, r.info.Tick
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
	s.emit(Event{Kind: EventRunStarted, Job: e.name, Tick: tick, RunID: r.info.RunID, Fence: r.info.Fence,
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
func callJob(ctx context.Context, job Job, info RunInfo) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Job: info.Job, Value: v, Stack: debug.Stack()}
		}
	}()
	return job.Run(ctx, info)
}

// finishRun waits for r's job to return, or to be abandoned, releases the
// lease and reports the result.
func (s *Scheduler) finishRun(rn *runner, r *run) {
	var out outcome
	select {
	case out = <-r.done:
	case <-rn.abandon:
		out = outcome{cause: context.Cause(r.ctx), abandoned: true}
	}
	duration := time.Since(r.start)
	if !out.returned.IsZero() {
		duration = out.returned.Sub(r.start) // the job's own time, without waiting for its group
	}
	relErr := s.release(rn, r.lease, func() []slog.Attr { return r.attrs() })
	result, err := s.end(r, out, relErr, true)
	s.emit(Event{Kind: EventRunFinished, Job: r.info.Job, Tick: r.info.Tick, RunID: r.info.RunID,
		Fence: r.info.Fence, Result: result, Duration: duration, Attempts: r.attempts, Err: err})

	s.logRun(context.WithoutCancel(rn.jobCtx), r, result, duration, err)
}

// end records that r's job returned (final false, from its goroutine), or
// that its lease was released (final true, from its handler). The first
// call takes the run off the running count and records its result, so
// that Entries and Trigger see a finished run as finished at once, even
// while its lease is kept for its start group. The release's call records
// the result again, now knowing whether the lease was lost (relErr); a job
// that returns after it was abandoned changes nothing.
func (s *Scheduler) end(r *run, out outcome, relErr error, final bool) (Result, error) {
	result, err := classify(out, relErr)
	s.mu.Lock()
	defer s.mu.Unlock()
	first := r.ended.CompareAndSwap(false, true)
	if first {
		r.e.running.Add(-1)
	}
	if first || final {
		r.e.lastResult, r.e.lastSkip, r.e.lastErr = result, 0, err
	}
	return result, err
}

// logRun logs the end of run r. Its attributes are built only if the
// logger takes the record: with thousands of runs a tick, they would cost
// the CPU the other runs' starts need.
func (s *Scheduler) logRun(ctx context.Context, r *run, result Result, duration time.Duration, err error) {
	level, msg := slog.LevelError, "run failed"
	switch result {
	case ResultSuccess:
		level, msg = slog.LevelInfo, "run finished"
	case ResultCanceled:
		level, msg = slog.LevelWarn, "run canceled"
	case ResultAbandoned:
		level, msg = slog.LevelError, "run abandoned: the job ignored its context's cancellation"
	}
	if !s.log.Enabled(ctx, level) {
		return
	}
	attrs := r.attrs(slog.String("result", result.String()), slog.Duration("duration", duration))
	if result != ResultSuccess {
		attrs = append(attrs, slog.Any("error", err))
	}
	if pe, ok := err.(*PanicError); ok && result == ResultPanic {
		attrs = append(attrs, slog.String("stack", string(pe.Stack)))
	}
	s.log.LogAttrs(ctx, level, msg, attrs...)
}

// classify turns how a job returned, and how its lease was released, into
// a Result and the error to report.
// A lease found lost at the release after the scheduler cancelled the
// job (Shutdown, Run's context) was lost because the keepalive stopped
// with the job's context, not because of the nodes: the run is reported as
// canceled, or abandoned, not as lock_lost.
func classify(out outcome, releaseErr error) (Result, error) {
	switch {
	case errors.Is(out.cause, ErrLockLost):
		return ResultLockLost, withCause(out.cause, out.err)
	case out.abandoned:
		return ResultAbandoned, errors.Join(ErrShutdownTimeout, out.cause)
	case out.cause == nil && errors.Is(releaseErr, ErrLockLost):
		return ResultLockLost, withCause(releaseErr, out.err)
	}
	if _, ok := out.err.(*PanicError); ok {
		return ResultPanic, out.err
	}
	switch {
	case out.err == nil:
		return ResultSuccess, nil
	case errors.Is(out.cause, ErrRunTimeout):
		return ResultTimeout, withCause(out.cause, out.err)
	case out.cause != nil:
		return ResultCanceled, withCause(out.cause, out.err)
	default:
		return ResultFailure, out.err
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

// tickAttrs returns the log attributes naming a tick of a job.
func tickAttrs(job string, tick time.Time, extra ...slog.Attr) []slog.Attr {
	attrs := []slog.Attr{slog.String("job", job)}
	if !tick.IsZero() {
		attrs = append(attrs, slog.Time("scheduled_at", tick))
	}
	return append(attrs, extra...)
}
