package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

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
