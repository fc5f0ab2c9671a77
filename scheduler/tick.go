package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/redcron/redcron/internal/parts"
	"github.com/redcron/redcron/mutex"
)

// A tick's path, from its timer to a won lease or a skip: the loop finds
// the due ticks (loop, dispatch); a batch of them is checked and claimed
// at once (handleBatch, checkTick, lockAndRun), an undecided claim retried
// (acquire); a won lease goes to run.go (runWon), a tick not run is
// skipped and says why (lockFailed, skip). The locker behind it is
// redlock.go.

// maxSleep bounds the loop's sleeps, so that it notices a step of the wall
// clock (which timers, running on the monotonic clock, ignore) within a
// minute.
const maxSleep = time.Minute

// Causes of the end of a tick's lock attempts.
var (
	errNewerTick = errors.New("scheduler: a newer tick is being attempted")
	errRemoved   = errors.New("scheduler: job removed")
)

// dueTick is a tick handed by the loop to a handler goroutine.
type dueTick struct {
	e    *entry
	tick time.Time
	// missed is the first of the ticks skipped because a later one was
	// already due (tick itself if none was).
	missed time.Time
	// ctx bounds the tick's lock attempts; cancel ends them.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// starts is the start group of the tick's instant in its batch, or
	// nil; member reports whether the batch's first attempt won the tick's
	// lease, which makes the tick one of the group's members. A lease won
	// by a later attempt may join the group (see startGroup.join).
	starts *startGroup
	member bool
	// slot is the run slot the tick holds (WithMaxConcurrentRuns), or nil.
	slot *slot
}

// loop dispatches due ticks until rn.loopCtx is done. It owns the timer.
func (s *Scheduler) loop(rn *session) {
	timer := time.NewTimer(maxSleep)
	defer timer.Stop()
	// A wake or the timer may be ready with loopCtx done, and select picks
	// at random: no round is dispatched once the loop is to stop.
	for rn.loopCtx.Err() == nil {
		timer.Reset(s.dispatch(rn))
		select {
		case <-rn.loopCtx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// dispatch starts a handler for every job whose next tick is due and
// returns how long to sleep until the next tick. When several ticks are
// due, one handler takes them all, so that their first lock attempts are
// made in one call (Locker.AcquireAll).
//
// A tick is due lock-ahead before it (WithLockAhead). When several ticks of
// a job are past (the process was paused, or the clock stepped forward),
// only the latest is handled; the earlier ones are skipped as misfires.
func (s *Scheduler) dispatch(rn *session) time.Duration {
	now := s.cfg.clock()
	wait := maxSleep
	var due []dueTick
	s.mu.Lock()
	for _, e := range s.jobs {
		if !e.next.IsZero() && !e.at.After(now) {
			d := dueTick{e: e, missed: e.next, tick: e.next}
			if !d.tick.After(now) {
				d.tick = lastTick(e.sched, d.tick, now)
			}
			e.next = e.sched.Next(d.tick)
			// From the later of the tick and now: a tick handled late
			// keeps at least half the time to the next one.
			e.at = s.dispatchAt(later(d.tick, now), e.next)
			if e.abandon != nil {
				e.abandon(errNewerTick)
			}
			d.ctx, d.cancel = context.WithCancelCause(rn.loopCtx)
			e.abandon = d.cancel
			due = append(due, d)
		}
		if !e.next.IsZero() {
			wait = min(wait, e.at.Sub(now))
		}
	}
	s.mu.Unlock()

	batch := len(due) > 1
	for _, d := range due {
		s.skipMissed(d)
		if !batch {
			rn.wg.Go(func() { s.handleTick(rn, d) })
		}
	}
	if batch {
		rn.wg.Go(func() { s.handleBatch(rn, due) })
	}
	return max(wait, 0)
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// dispatchAt returns when to dispatch next, the tick after prev (or the
// first tick, computed at prev): next less the lock-ahead, which is at most
// half the time from prev to next.
func (s *Scheduler) dispatchAt(prev, next time.Time) time.Time {
	if next.IsZero() {
		return next
	}
	return next.Add(-max(0, min(s.cfg.lockAhead, next.Sub(prev)/2)))
}

// maxMisfireReports bounds the ticks one dispatch reports as missed, one
// event each: a clock stepped forward by months must not stall the loop
// reporting millions of them.
const maxMisfireReports = 100

// skipMissed reports the ticks of d skipped because a later one was due:
// the first maxMisfireReports of them one by one, and how many in all in
// one log line (at least that many more, when there were more).
func (s *Scheduler) skipMissed(d dueTick) {
	n := 0
	t := d.missed
	for ; t.Before(d.tick) && n < maxMisfireReports; t = d.e.sched.Next(t) {
		s.skip(d.e, t, skipMisfire, 0, nil)
		n++
	}
	if n == 0 {
		return
	}
	missed := slog.Int("missed", n)
	if t.Before(d.tick) {
		missed = slog.String("missed", fmt.Sprintf("more than %d (the first %d reported)", n, n))
	}
	s.log.LogAttrs(d.ctx, slog.LevelWarn, "ticks missed",
		slog.String("job", d.e.name), missed,
		slog.Time("first", d.missed), slog.Time("scheduled_at", d.tick))
}

// handleTick handles one tick of one job: it checks that the tick is not
// late and that the job is not running here, acquires the lease and runs
// the job at the tick.
func (s *Scheduler) handleTick(rn *session, d dueTick) {
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
	s.lockAndRunInSlot(rn, d, req)
}

// handleBatch handles ticks of several jobs that came due together: it
// checks each tick as handleTick does, takes a run slot for each
// (WithMaxConcurrentRuns: a tick finding none free goes on alone, see
// slotNow), makes the first lock
// attempt of the remaining ones in one call of AcquireAll, then goes on for
// each tick as handleTick does after its first attempt: a run or an
// undecided attempt's retries in a goroutine of its own, a refusal here.
func (s *Scheduler) handleBatch(rn *session, due []dueTick) {
	ticks, reqs := make([]dueTick, 0, len(due)), make([]LockRequest, 0, len(due))
	for _, d := range due {
		switch req, v := s.checkTick(d, true); v {
		case tickGo:
			if s.slotNow(rn, &d, req) {
				ticks = append(ticks, d)
				reqs = append(reqs, req)
			}
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
	results := s.locker.AcquireAll(ctx, reqs)
	cancel()
	results = s.alignResults(rn, results, len(reqs))

	starts := startGroups(ticks, results, s.cfg.clock())
	for i, d := range ticks {
		first := results[i]
		d.starts = starts[i]
		d.member = first.won()
		if refused(first.Err) && !s.askAgain(d.tick, first.Err) && !queued(d.e, reqs[i], first.Err) {
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

// alignResults returns n results: those of a Locker's AcquireAll that returned
// one per request, or else its first n results, completed with errors for
// the missing ones; it releases the leases of any results beyond n.
func (s *Scheduler) alignResults(rn *session, results []LockResult, n int) []LockResult {
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
	err := fmt.Errorf("scheduler: Locker.AcquireAll returned %d results for %d requests", len(results), n)
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
// over; and that, under OverlapQueueOne or OverlapReplace, a tick come
// while its job runs here goes on (its lock attempts wait for the run's
// lease), after cancelling the run under OverlapReplace.
func (s *Scheduler) checkTick(d dueTick, recheck bool) (LockRequest, tickVerdict) {
	e, tick := d.e, d.tick
	s.mu.Lock()
	e.prev = tick
	running := e.running.Load() > 0
	s.mu.Unlock()

	late := s.cfg.clock().Sub(tick)
	if late > e.cfg.lateLimit() {
		s.skip(e, tick, skipMisfire, 0, nil)
		s.log.LogAttrs(d.ctx, slog.LevelWarn, "tick skipped: later than its grace",
			tickAttrs(e.name, tick, slog.Duration("late", late))...)
		return LockRequest{}, tickSkip
	}
	switch {
	case !running:
	case recheck && late < 0:
		return LockRequest{}, tickLater
	case e.cfg.overlap == OverlapReplace:
		s.replace(d.ctx, e, tick)
	case e.cfg.overlap == OverlapSkip:
		s.skip(e, tick, skipOverlap, 0, nil)
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
// of time whose previous run is still going (under OverlapSkip; under the
// other policies acquire waits for the run), or whose lease is lost before
// the tick, is attempted again, once, at the tick. A lease won is run even
// if the scheduler is stopping (Shutdown waits for it), or if the job's
// newer tick came while it was being won (the tick runs late), unless the
// job was removed or its tick was still to come (givenUp). It does not
// call d.cancel; it frees d's run slot, unless a run took it over.
func (s *Scheduler) lockAndRun(rn *session, d dueTick, req LockRequest, first *LockResult) {
	defer d.slot.free()
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
		if err == nil && first != nil && attempts == 1 && s.givenUp(d) {
			// The batch's attempt was not bounded by d.ctx: the job was
			// removed, or a newer tick came before this one, while its
			// lease was being won.
			s.releaseUnused(rn, e.name, tick, lease)
			err = fmt.Errorf("scheduler: lease won after the tick was abandoned, released: %w", context.Cause(d.ctx))
		}
		first = nil
		switch {
		case err == nil:
			d.slot.settle()
			if starts == nil && d.starts.join() {
				starts = d.starts // won by a retry, before the gate opened
			}
			var ended bool
			ended, lost = s.runWon(rn, d, lease, total, starts, again)
			starts = nil // the run marked itself done in its group
			if ended {
				return
			}
		case lost != nil && errors.Is(err, mutex.ErrHeld):
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

// runWon starts the run of a tick whose lease was won, at the tick, and
// reports whether the tick's handling ended: the run ran, or it cannot be
// tried again. Otherwise it returns why the lease was lost before the
// tick, to be won again at the tick (only on the first pass: again).
func (s *Scheduler) runWon(rn *session, d dueTick, lease Lease, total int, starts *startGroup, again bool) (bool, error) {
	r, err := s.startAtTick(rn, d, lease, total, starts)
	switch {
	case err == nil:
		s.finishRun(rn, r)
		return true, nil
	case errors.Is(err, errClusterLimit):
		s.skip(d.e, d.tick, skipLimit, total, err)
		s.log.LogAttrs(d.ctx, slog.LevelWarn, "tick skipped: no permit of its job's cluster limit came free in time",
			tickAttrs(d.e.name, d.tick, slog.Any("error", err))...)
		return true, nil
	case abandoned(d) || errors.Is(err, errRemoved):
		s.lockFailed(rn, d, total, err)
		return true, nil
	case !again || rn.jobCtx.Err() != nil:
		s.leaseLost(d, total, err)
		return true, nil
	}
	s.log.LogAttrs(d.ctx, slog.LevelWarn, "lease lost before its tick; trying again at the tick",
		tickAttrs(d.e.name, d.tick, slog.Any("error", err))...)
	return false, err
}

// givenUp reports whether a lease won for d's tick is not to run: its job
// removed, or a newer tick of it dispatched before this one came. A tick
// that has come runs even if its job's next tick was dispatched while its
// lease was being won: it runs late (its start delay says how late), and
// releasing the lease would waste a claim already made, under overload
// most of them.
func (s *Scheduler) givenUp(d dueTick) bool {
	cause := context.Cause(d.ctx)
	return errors.Is(cause, errRemoved) || errors.Is(cause, errNewerTick) && d.tick.After(s.cfg.clock())
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
	s.skip(d.e, d.tick, skipLeaseLost, attempts, err)
	s.log.LogAttrs(d.ctx, slog.LevelWarn, "tick skipped: its lease was lost, or given up, before its run started",
		tickAttrs(d.e.name, d.tick, slog.Any("error", err))...)
}

// lockFailed reports a tick that could not be locked.
func (s *Scheduler) lockFailed(rn *session, d dueTick, attempts int, err error) {
	e, tick := d.e, d.tick
	var reason string
	switch {
	case errors.Is(context.Cause(d.ctx), errRemoved):
		// Whatever the answer, the job is gone: nothing to report.
		s.log.LogAttrs(d.ctx, slog.LevelDebug, "tick abandoned: job removed",
			tickAttrs(e.name, tick, slog.Any("error", err))...)
		return
	case errors.Is(err, mutex.ErrHeld):
		reason = skipHeld
	case errors.Is(err, mutex.ErrAlreadyRun):
		reason = skipAlreadyRun
	case errors.Is(err, ErrOverlap):
		reason = skipOverlap
	case errors.Is(err, errPaused):
		reason = skipPaused
	case rn.loopCtx.Err() != nil:
		s.log.LogAttrs(d.ctx, slog.LevelDebug, "tick abandoned: scheduler stopping",
			tickAttrs(e.name, tick, slog.Any("error", err))...)
		return
	default:
		if errors.Is(context.Cause(d.ctx), errNewerTick) && !errors.Is(err, errNewerTick) {
			err = endedError{err}
		}
		reason = skipNoQuorum
		if errors.Is(err, parts.ErrBehind) {
			reason = skipOverload
		}
		s.skip(e, tick, reason, attempts, err)
		s.logNoDecision(d.ctx, e, tick, reason, attempts, err)
		return
	}
	s.skip(e, tick, reason, attempts, nil)
	if s.log.Enabled(d.ctx, slog.LevelDebug) { // refusals come by the thousand with many jobs
		s.log.LogAttrs(d.ctx, slog.LevelDebug, "tick skipped",
			tickAttrs(e.name, tick, slog.String("reason", reason))...)
	}
}

// logNoDecision logs a tick skipped for want of a lock decision (reason
// no_quorum, or overload when this replica's claims were behind): as a
// warning at most once a minute per job, saying how many were skipped
// since, and otherwise at debug level. While nodes are down every tick of
// every job is skipped alike; the Redlock logs the nodes' states as they
// change.
func (s *Scheduler) logNoDecision(ctx context.Context, e *entry, tick time.Time, reason string, attempts int, err error) {
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
	attrs := tickAttrs(e.name, tick, slog.String("reason", reason), slog.Int("attempts", attempts), slog.Any("error", err))
	if level == slog.LevelWarn && quiet > 0 {
		attrs = append(attrs, slog.Int("skipped_since_last_warning", quiet))
	}
	s.log.LogAttrs(ctx, level, "tick skipped: no lock decision", attrs...)
}

// skip records and reports a skipped tick, unless its job was removed: it
// is reported under the lock, as Remove reports the removal, so that no
// skip of a job follows job_removed.
func (s *Scheduler) skip(e *entry, tick time.Time, reason string, attempts int, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.removed.Load() {
		return
	}
	e.lastResult, e.lastSkip, e.lastErr = "", reason, err
	s.emit(e, Event{Kind: KindSkipped, Job: e.name, Tick: tick, Skip: reason, Attempts: attempts, Err: err})
}

// tickAttrs returns the log attributes naming a tick of a job.
func tickAttrs(job string, tick time.Time, extra ...slog.Attr) []slog.Attr {
	attrs := []slog.Attr{slog.String("job", job)}
	if !tick.IsZero() {
		attrs = append(attrs, slog.Time("scheduled_at", tick))
	}
	return append(attrs, extra...)
}

// endedError is a lock error whose retries a newer tick ended; its text is
// made only when asked for, since under overload such skips come by the
// thousand.
type endedError struct{ err error }

func (e endedError) Error() string {
	return e.err.Error() + " (retries ended: " + errNewerTick.Error() + ")"
}

func (e endedError) Unwrap() []error { return []error{e.err, errNewerTick} }

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
