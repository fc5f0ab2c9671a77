package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/redcron/redcron/internal/parts"
	"github.com/redcron/redcron/mutex"
)

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
