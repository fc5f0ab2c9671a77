package scheduler_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// gauge counts the runs in progress on one replica and keeps the most seen
// at once.
type gauge struct {
	mu        sync.Mutex
	now, peak int
}

// job returns a job that counts itself in g for d, records its run in log,
// and returns at once if its context ends.
func (g *gauge) job(log *spans, d time.Duration) scheduler.JobFunc {
	inner := log.job(d, false)
	return func(ctx context.Context, info scheduler.RunInfo) error {
		g.mu.Lock()
		g.now++
		g.peak = max(g.peak, g.now)
		g.mu.Unlock()
		defer func() {
			g.mu.Lock()
			g.now--
			g.mu.Unlock()
		}()
		return inner(ctx, info)
	}
}

func (g *gauge) max() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peak
}

// askLog is a Locker that records the ticks asked for, by job.
type askLog struct {
	scheduler.Locker
	mu    sync.Mutex
	asked map[string][]time.Time
}

func (l *askLog) note(reqs ...scheduler.LockRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range reqs {
		l.asked[r.Job] = append(l.asked[r.Job], r.Tick)
	}
}

func (l *askLog) Acquire(ctx context.Context, req scheduler.LockRequest) (scheduler.Lease, error) {
	l.note(req)
	return l.Locker.Acquire(ctx, req)
}

func (l *askLog) AcquireAll(ctx context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	l.note(reqs...)
	return l.Locker.AcquireAll(ctx, reqs)
}

// TestMaxConcurrentRunsSkip: with WithMaxConcurrentRuns(2, false), four
// jobs of 30 s due every minute run two at a time: at each tick two run
// and two are skipped (max_runs) with no lock attempt, so that another
// replica could claim them.
func TestMaxConcurrentRunsSkip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		ask := &askLog{Locker: locker(), asked: map[string][]time.Time{}}
		var g gauge
		var log spans
		s := newScheduler(t, ask, scheduler.WithMaxConcurrentRuns(2, false), scheduler.WithObserver(rec.Observe))
		jobs := []string{"a", "b", "c", "d"}
		for _, job := range jobs {
			mustAdd(t, s, job, "* * * * *", g.job(&log, 30*time.Second))
		}
		t0 := time.Now()
		stop := start(t, s)
		sleepUntil(t0.Add(3*time.Minute + 45*time.Second))
		stop()

		if g.max() != 2 {
			t.Errorf("at most %d runs at once, want 2", g.max())
		}
		runs := map[time.Time]int{} // by tick, all from the scheduler
		for _, job := range jobs {
			for _, r := range log.of(job) {
				runs[r.info.Tick]++
				if !r.start.Equal(r.info.Tick) {
					t.Errorf("%s: tick %s started at %s", job, hm(r.info.Tick), hm(r.start))
				}
			}
		}
		skips := map[time.Time]int{}
		for _, ev := range rec.skips("max_runs") {
			skips[ev.Tick]++
			if ev.Attempts != 0 || slices.ContainsFunc(ask.asked[ev.Job], ev.Tick.Equal) {
				t.Errorf("%s: tick %s skipped as max_runs after a lock attempt", ev.Job, hm(ev.Tick))
			}
		}
		if len(runs) != 3 || len(skips) != 3 {
			t.Errorf("runs by tick %v, max_runs skips by tick %v: want 3 ticks each", runs, skips)
		}
		for tick, n := range runs {
			if n != 2 || skips[tick] != 2 {
				t.Errorf("tick %s: %d runs and %d max_runs skips, want 2 and 2", hm(tick), n, skips[tick])
			}
		}
		if other := len(rec.of("skipped")) - len(rec.skips("max_runs")); other != 0 {
			t.Errorf("%d skips for other reasons: %+v", other, rec.of("skipped"))
		}
	})
}

// TestMaxConcurrentRunsLeavesTicksToOthers: two replicas of one run slot
// each (skip mode) and two jobs due together: each tick of each job runs,
// once, one job on each replica. A replica whose slot is held by a tick it
// then loses to the other replica waits for that refusal before skipping
// its other tick, rather than skipping it while the other replica skips it
// too.
func TestMaxConcurrentRunsLeavesTicksToOthers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := locker()
		var log spans
		gauges := make([]gauge, 2)
		var stops []func()
		for i := range gauges {
			s := newScheduler(t, l, scheduler.WithMaxConcurrentRuns(1, false),
				scheduler.WithInstanceID([]string{"r0", "r1"}[i]))
			for _, job := range []string{"a", "b"} {
				mustAdd(t, s, job, "* * * * *", gauges[i].job(&log, 30*time.Second))
			}
			stops = append(stops, start(t, s))
		}
		t0 := time.Now()
		sleepUntil(t0.Add(10*time.Minute + 45*time.Second))
		stopAll(stops...)

		for i := range gauges {
			if gauges[i].max() != 1 {
				t.Errorf("replica %d: at most %d runs at once, want 1", i, gauges[i].max())
			}
		}
		want := expectTicks(t0, t0.Add(10*time.Minute), time.Minute)
		for _, job := range []string{"a", "b"} {
			var ticks []time.Time
			for _, r := range log.of(job) {
				ticks = append(ticks, r.info.Tick)
			}
			if !slices.EqualFunc(ticks, want, time.Time.Equal) {
				t.Errorf("%s ran ticks %v, want each of %v once", job, ticks, want)
			}
		}
	})
}

// TestMaxConcurrentRunsWait: with WithMaxConcurrentRuns(1, true), of two
// jobs of 20 s due every minute, one runs at the tick and the other as soon
// as the first returns, within its misfire grace; with a grace of 10 s, it
// waits 10 s in vain and is skipped (max_runs), never claimed.
func TestMaxConcurrentRunsWait(t *testing.T) {
	for _, tc := range []struct {
		name   string
		grace  time.Duration
		starts []time.Duration // of the runs, after the tick, in order
		skips  int             // per tick
	}{
		{"within the grace", time.Minute, []time.Duration{0, 20 * time.Second}, 0},
		{"after the grace", 10 * time.Second, []time.Duration{0}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				ask := &askLog{Locker: locker(), asked: map[string][]time.Time{}}
				var g gauge
				var log spans
				s := newScheduler(t, ask, scheduler.WithMaxConcurrentRuns(1, true), scheduler.WithObserver(rec.Observe))
				for _, job := range []string{"a", "b"} {
					mustAdd(t, s, job, "* * * * *", g.job(&log, 20*time.Second), scheduler.WithMisfireGrace(tc.grace))
				}
				t0 := time.Now()
				stop := start(t, s)
				sleepUntil(t0.Add(3*time.Minute + 45*time.Second))
				stop()

				if g.max() != 1 {
					t.Errorf("at most %d runs at once, want 1", g.max())
				}
				starts := map[int64][]time.Duration{} // by tick
				for _, job := range []string{"a", "b"} {
					for _, r := range log.of(job) {
						starts[r.info.Tick.Unix()] = append(starts[r.info.Tick.Unix()], r.start.Sub(r.info.Tick))
					}
				}
				for _, tick := range expectTicks(t0, t0.Add(3*time.Minute), time.Minute) {
					got := starts[tick.Unix()]
					slices.Sort(got)
					if !slices.Equal(got, tc.starts) {
						t.Errorf("tick %s: runs started %v after it, want %v", hm(tick), got, tc.starts)
					}
				}
				skips := rec.skips("max_runs")
				if len(skips) != 3*tc.skips {
					t.Errorf("%d max_runs skips, want %d: %+v", len(skips), 3*tc.skips, skips)
				}
				for _, ev := range skips {
					if slices.ContainsFunc(ask.asked[ev.Job], ev.Tick.Equal) {
						t.Errorf("%s: tick %s skipped as max_runs after a lock attempt", ev.Job, hm(ev.Tick))
					}
				}
			})
		})
	}
}

// TestMaxConcurrentRunsWaitsUnclaimed: a replica whose one slot is taken by
// a long run waits for a slot before it claims a tick, not after: the
// ticks of another job run at their tick on a second replica, which has a
// slot free, every minute, rather than waiting on the first.
func TestMaxConcurrentRunsWaitsUnclaimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := locker()
		var log spans
		var busy, free gauge
		full := newScheduler(t, l, scheduler.WithMaxConcurrentRuns(1, true), scheduler.WithInstanceID("full"))
		mustAdd(t, full, "long", "@yearly", busy.job(&log, 0)) // triggered, until the stop
		mustAdd(t, full, "short", "* * * * *", busy.job(&log, 10*time.Second))
		other := newScheduler(t, l, scheduler.WithInstanceID("other"))
		mustAdd(t, other, "short", "* * * * *", free.job(&log, 10*time.Second))
		t0 := time.Now()
		stops := []func(){start(t, full), start(t, other)}
		if _, err := full.Trigger(context.Background(), "long"); err != nil {
			t.Fatalf("Trigger(long): %v", err)
		}
		sleepUntil(t0.Add(5*time.Minute + 30*time.Second))
		stopAll(stops...)

		want := expectTicks(t0, t0.Add(5*time.Minute), time.Minute)
		var ticks []time.Time
		for _, r := range log.of("short") {
			ticks = append(ticks, r.info.Tick)
			if r.info.Instance != "other" || !r.start.Equal(r.info.Tick) {
				t.Errorf("tick %s ran on %s at %s, want on other at its tick", hm(r.info.Tick), r.info.Instance, hm(r.start))
			}
		}
		if !slices.EqualFunc(ticks, want, time.Time.Equal) {
			t.Errorf("short ran ticks %v, want %v", ticks, want)
		}
		if runs := log.of("long"); len(runs) != 1 {
			t.Errorf("long ran %d times, want once", len(runs))
		}
	})
}

// TestMaxConcurrentRunsTrigger: a Trigger's run takes a slot too: on a
// replica whose one slot a run holds, Trigger waits for it within its
// context, and fails with the context's error if it ends first.
func TestMaxConcurrentRunsTrigger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g gauge
		var log spans
		s := newScheduler(t, locker(), scheduler.WithMaxConcurrentRuns(1, false))
		mustAdd(t, s, "tick", "* * * * *", g.job(&log, 40*time.Second))
		mustAdd(t, s, "manual", "@yearly", g.job(&log, time.Second))
		t0 := time.Now().Truncate(time.Minute)
		stop := start(t, s)
		sleepUntil(t0.Add(time.Minute + 10*time.Second)) // "tick" runs until 1:40

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := s.Trigger(ctx, "manual")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Trigger with the slot taken for longer than its context = %v, want DeadlineExceeded", err)
		}
		info, err := s.Trigger(context.Background(), "manual")
		if err != nil {
			t.Fatalf("Trigger: %v", err)
		}
		if at := time.Now(); !at.Equal(t0.Add(time.Minute + 40*time.Second)) {
			t.Errorf("Trigger started its run at %s, want at 1:40, when the slot came free", hm(at))
		}
		sleepUntil(t0.Add(time.Minute + 50*time.Second))
		stop()
		if runs := log.of("manual"); len(runs) != 1 || runs[0].info.RunID != info.RunID {
			t.Errorf("manual ran %d times, want once", len(runs))
		}
		if g.max() != 1 {
			t.Errorf("at most %d runs at once, want 1", g.max())
		}
	})
}

// TestMaxConcurrentRunsInvalid: a limit that is not positive is refused,
// naming the option.
func TestMaxConcurrentRunsInvalid(t *testing.T) {
	for _, n := range []int{0, -1} {
		_, err := scheduler.New(locker(), scheduler.WithMaxConcurrentRuns(n, false))
		if !errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), "WithMaxConcurrentRuns") {
			t.Errorf("WithMaxConcurrentRuns(%d): New = %v, want mutex.ErrInvalidOption naming the option", n, err)
		}
	}
}

// TestMaxConcurrentRunsLockAhead: in skip mode, a tick handled ahead of
// time (WithLockAhead) waits for a slot until its tick: of two jobs of
// 55 s due every minute on one slot, one runs at each tick, and they take
// turns: the tick of the job that did not run is handled 10 s ahead and
// takes the slot the other's run frees 5 s before the tick, rather than
// being skipped 10 s ahead (the running job's tick is handled at the tick,
// when its run is over).
func TestMaxConcurrentRunsLockAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		var g gauge
		var log spans
		s := newScheduler(t, locker(), scheduler.WithMaxConcurrentRuns(1, false),
			scheduler.WithLockAhead(10*time.Second), scheduler.WithObserver(rec.Observe))
		for _, job := range []string{"a", "b"} {
			mustAdd(t, s, job, "* * * * *", g.job(&log, 55*time.Second))
		}
		t0 := time.Now()
		stop := start(t, s)
		sleepUntil(t0.Add(4*time.Minute + 30*time.Second))
		stop()

		if g.max() != 1 {
			t.Errorf("at most %d runs at once, want 1", g.max())
		}
		runs := map[int64]int{}
		ran := map[int64]string{} // by tick, the job that ran
		for _, job := range []string{"a", "b"} {
			for _, r := range log.of(job) {
				runs[r.info.Tick.Unix()]++
				ran[r.info.Tick.Unix()] = job
				if !r.start.Equal(r.info.Tick) {
					t.Errorf("%s: tick %s started at %s", job, hm(r.info.Tick), hm(r.start))
				}
			}
		}
		for _, tick := range expectTicks(t0, t0.Add(4*time.Minute), time.Minute) {
			if runs[tick.Unix()] != 1 {
				t.Errorf("tick %s: %d runs, want 1", hm(tick), runs[tick.Unix()])
			}
			if prev := tick.Add(-time.Minute).Unix(); ran[prev] != "" && ran[prev] == ran[tick.Unix()] {
				t.Errorf("tick %s: %s ran, as at the tick before, want the other job", hm(tick), ran[tick.Unix()])
			}
		}
		if n := len(rec.skips("max_runs")); n != 4 {
			t.Errorf("%d max_runs skips, want 4 (one a tick)", n)
		}
	})
}

// TestMaxConcurrentRunsQueued: a tick that waits for its job's own run here
// (OverlapQueueOne) waits for the slot that run frees, even in skip mode:
// a 95 s job every minute on one slot runs as it does without a limit.
func TestMaxConcurrentRunsQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		var log spans
		s := newScheduler(t, locker(), scheduler.WithMaxConcurrentRuns(1, false), scheduler.WithObserver(rec.Observe))
		mustAdd(t, s, "job", "* * * * *", log.job(95*time.Second, false), scheduler.WithOverlap(scheduler.OverlapQueueOne))
		t0 := time.Now()
		stop := start(t, s)
		sleepUntil(t0.Add(6*time.Minute + 30*time.Second))
		stop()

		var starts []time.Duration
		for _, r := range log.of("job") {
			starts = append(starts, r.start.Sub(t0))
		}
		m := func(min, sec int) time.Duration {
			return time.Duration(min)*time.Minute + time.Duration(sec)*time.Second
		}
		if want := []time.Duration{m(1, 0), m(2, 35), m(4, 10), m(5, 45)}; !slices.Equal(starts, want) {
			t.Errorf("runs started at %v, want %v, as without a limit", starts, want)
		}
		if skips := rec.skips("max_runs"); len(skips) != 0 {
			t.Errorf("max_runs skips %+v, want none", skips)
		}
		var skipped []time.Duration
		for _, tick := range skippedTicks(rec, "job", "overlap") {
			skipped = append(skipped, tick.Sub(t0))
		}
		if want := []time.Duration{m(3, 0), m(6, 0)}; !slices.Equal(skipped, want) { // replaced by the next, or at the stop
			t.Errorf("ticks %v skipped as overlap, want %v, as without a limit", skipped, want)
		}
	})
}
