package scheduler

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// WithMaxConcurrentRuns allows at most n runs at once on this replica, of
// all its jobs, scheduled or triggered (gocron's WithLimitConcurrentJobs).
// It is a limit of the replica, not of the cluster: another replica runs
// what this one leaves.
//
// A tick takes a slot before its lock attempts and keeps it until its run
// returns (or until it is known not to run), so that a full replica never
// claims a tick it cannot start: it makes no lock attempt, and another
// replica runs the tick. A tick that finds every slot taken waits for one:
//   - if wait is true, until its misfire grace (or catch-up window) ends,
//     like gocron's LimitModeWait;
//   - if wait is false, like LimitModeReschedule, until its tick (for a
//     tick handled ahead, WithLockAhead), and after it only while some
//     slot is held by a tick whose lock attempts are undecided, which a
//     refusal frees: a tick is skipped only when this replica's slots are
//     held by runs (or leases won), not by ticks that others run.
//
// A tick that waits for its job's own run here to end (OverlapQueueOne or
// OverlapReplace) waits for a slot as if wait were true, since that run
// frees one; if the run is still going when the wait ends, the tick is
// skipped as overlap, as without a limit. Any other tick that gets no slot
// is skipped with reason max_runs. A Trigger waits for a slot within its
// context, whatever wait is; the admin command's trigger is left to a
// replica with a slot free.
//
// With WithLockAhead, a tick takes its slot when its lock attempts start,
// ahead of the tick; a tick waiting for a run of its job on another replica
// (OverlapQueueOne) holds its slot while it waits.
//
// n must be positive. The default is no limit.
func WithMaxConcurrentRuns(n int, wait bool) Option {
	return func(c *config) error {
		if n <= 0 {
			return optionError("WithMaxConcurrentRuns", "%d runs, not positive", n)
		}
		c.maxRuns, c.waitForSlot = n, wait
		return nil
	}
}

// limiter holds the run slots of WithMaxConcurrentRuns. A slot is taken
// by a tick (or a Trigger) before its lock attempts; it is pending until
// the lease is won, when it is settled, and freed when the run returns or
// the tick turns out not to run.
type limiter struct {
	n       int
	mu      sync.Mutex
	taken   int           // slots taken
	pending int           // of which not settled
	changed chan struct{} // closed, and replaced, when a slot is freed or settled
}

func newLimiter(n int) *limiter {
	return &limiter{n: n, changed: make(chan struct{})}
}

// broadcast wakes the waiters for a slot; l.mu is held.
func (l *limiter) broadcast() {
	close(l.changed)
	l.changed = make(chan struct{})
}

// take takes a slot, if one is free at once or before ctx is done: it
// waits for one at most wait, and longer, up to settle, while some slot
// taken is pending (a lock attempt that may be refused, which frees its
// slot). It reports whether it took one; the slot is nil, and ok, if l is
// nil (no limit).
func (l *limiter) take(ctx context.Context, wait, settle time.Duration) (*slot, bool) {
	if l == nil {
		return nil, true
	}
	start := time.Now()
	for {
		l.mu.Lock()
		if l.taken < l.n {
			l.taken++
			l.pending++
			l.mu.Unlock()
			return &slot{l: l}, true
		}
		limit := wait
		if l.pending > 0 {
			limit = max(wait, settle)
		}
		changed := l.changed
		l.mu.Unlock()
		if !awaitChange(ctx, changed, limit-time.Since(start)) {
			return nil, false
		}
	}
}

// awaitChange waits for changed to be closed, at most left, and reports
// whether to look again: false if left has passed or ctx is done.
func awaitChange(ctx context.Context, changed <-chan struct{}, left time.Duration) bool {
	if left <= 0 || ctx.Err() != nil {
		return false
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-changed:
		return true
	case <-t.C:
		return true // the limit may have changed: look again, once more
	case <-ctx.Done():
		return false
	}
}

// slot is a run slot taken for one tick or Trigger. The methods of a nil
// *slot do nothing (no limit).
type slot struct {
	l *limiter
	// Guarded by l.mu.
	settled, freed bool
}

// settle records that the slot's lease was won: the slot no longer
// may come back at the lock's refusal.
func (sl *slot) settle() {
	if sl == nil {
		return
	}
	sl.l.mu.Lock()
	defer sl.l.mu.Unlock()
	if !sl.settled && !sl.freed {
		sl.settled = true
		sl.l.pending--
		sl.l.broadcast()
	}
}

// free gives the slot back, if it was not already: when the run that took
// it over returns, or when its tick or Trigger will not run.
func (sl *slot) free() {
	if sl == nil {
		return
	}
	sl.l.mu.Lock()
	defer sl.l.mu.Unlock()
	if sl.freed {
		return
	}
	sl.freed = true
	sl.l.taken--
	if !sl.settled {
		sl.l.pending--
	}
	sl.l.broadcast()
}

// tickSlot takes a run slot for d's tick, waiting for one as
// WithMaxConcurrentRuns says, and reports whether it did; if not, it
// reports the tick as skipped, unless its job was removed or the scheduler
// is stopping: as overlap if it waited behind its job's own run here,
// which still goes, and as max_runs otherwise.
func (s *Scheduler) tickSlot(rn *session, d dueTick) (*slot, bool) {
	e := d.e
	end := d.tick.Add(e.cfg.lateLimit())
	until := d.tick
	if queued := e.cfg.overlap != OverlapSkip && e.running.Load() > 0; s.cfg.waitForSlot || queued {
		until = end
	}
	now := s.cfg.clock()
	sl, ok := s.limit.take(d.ctx, until.Sub(now), end.Sub(now))
	switch {
	case ok:
		return sl, true
	case e.removed.Load():
		return nil, false // nothing to report
	case e.cfg.overlap != OverlapSkip && e.running.Load() > 0:
		// Still behind its job's own run: skipped as it would be without
		// a limit.
		s.skip(e, d.tick, skipOverlap, 0, nil)
		s.log.LogAttrs(d.ctx, slog.LevelDebug, "tick skipped: previous run still going here",
			tickAttrs(e.name, d.tick)...)
		return nil, false
	case rn.loopCtx.Err() != nil:
		s.log.LogAttrs(d.ctx, slog.LevelDebug, "tick abandoned while waiting for a run slot: scheduler stopping",
			tickAttrs(e.name, d.tick)...)
		return nil, false
	}
	s.skip(e, d.tick, skipMaxRuns, 0, nil)
	level := slog.LevelDebug // left to the other replicas
	if s.cfg.waitForSlot {
		level = slog.LevelWarn // waited for its grace in vain
	}
	s.log.LogAttrs(d.ctx, level, "tick skipped: every run slot of this replica taken",
		tickAttrs(e.name, d.tick, slog.Int("max_concurrent_runs", s.cfg.maxRuns))...)
	return nil, false
}

// slotNow takes a run slot for d's tick into d.slot, if one is free at
// once, and reports whether it did (or there is no limit). If not, it
// hands the tick to a goroutine of its own, which waits for a slot or
// skips the tick, as a tick handled alone does (see lockAndRunInSlot).
func (s *Scheduler) slotNow(rn *session, d *dueTick, req LockRequest) bool {
	sl, ok := s.limit.take(d.ctx, 0, 0)
	if ok {
		d.slot = sl
		return true
	}
	alone := *d
	rn.wg.Go(func() {
		defer alone.cancel(nil)
		s.lockAndRunInSlot(rn, alone, req)
	})
	return false
}

// lockAndRunInSlot takes a run slot for d's tick (see tickSlot), then
// acquires the lease of req and runs the job (lockAndRun, which frees the
// slot).
func (s *Scheduler) lockAndRunInSlot(rn *session, d dueTick, req LockRequest) {
	sl, ok := s.tickSlot(rn, d)
	if !ok {
		return
	}
	d.slot = sl
	s.lockAndRun(rn, d, req, nil)
}
