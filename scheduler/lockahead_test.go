package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestLockAhead checks that with WithLockAhead the ticks of jobs due
// together are locked in one batch ahead of the tick, by the lead or by
// half the period if that is less, and that the runs start at the tick.
func TestLockAhead(t *testing.T) {
	for _, tt := range []struct {
		name      string
		lead      time.Duration
		wantAhead time.Duration
	}{
		{"off", 0, 0},
		{"300ms", 300 * time.Millisecond, 300 * time.Millisecond},
		{"capped at half the period", 2 * time.Second, 500 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now() // a whole second in the bubble
				l := locker()
				obs := &recorder{}
				var log runLog
				s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithObserver(obs.Observe), scheduler.WithLockAhead(tt.lead))
				for _, job := range []string{"a", "b"} {
					mustAdd(t, s, job, "* * * * * *", log.job(100*time.Millisecond))
				}
				stop := start(t, s)
				sleepUntil(t0.Add(3400 * time.Millisecond))
				stop()

				ticks := expectTicks(t0, t0.Add(3400*time.Millisecond), time.Second)
				grants := l.Grants()
				if len(grants) != 2*len(ticks) {
					t.Fatalf("%d grants, want %d: %+v", len(grants), 2*len(ticks), grants)
				}
				for _, g := range grants {
					if ahead := g.Tick.Sub(g.Acquired); ahead != tt.wantAhead {
						t.Errorf("job %s tick %v: lease won %v before the tick, want %v", g.Job, g.Tick, ahead, tt.wantAhead)
					}
				}
				if n := l.AcquireAllCalls(); n != len(ticks) {
					t.Errorf("%d AcquireAll calls, want one per tick (%d)", n, len(ticks))
				}
				started := obs.of("run_started")
				if len(started) != 2*len(ticks) {
					t.Errorf("%d runs started, want %d", len(started), 2*len(ticks))
				}
				ids := map[string]bool{}
				for _, ev := range started {
					if ev.StartDelay != 0 {
						t.Errorf("job %s tick %v started %v after its tick, want at it", ev.Job, ev.Tick, ev.StartDelay)
					}
					if at, ok := uuidV7Time(ev.RunID); !ok || !at.Equal(ev.Tick) || ids[ev.RunID] {
						t.Errorf("job %s tick %v: run id %s, want a new UUIDv7 of the tick", ev.Job, ev.Tick, ev.RunID)
					}
					ids[ev.RunID] = true
				}
				if skips := obs.of("skipped"); len(skips) != 0 {
					t.Errorf("skipped ticks: %+v", skips)
				}
			})
		})
	}
}

// TestLockAheadPreviousRun checks that a tick whose previous run is still
// going when its lock-ahead begins, here or on another replica, is decided
// at the tick, when that run is over, rather than skipped as an overlap.
// Another job due at the same instants makes the ticks go through the
// batch.
func TestLockAheadPreviousRun(t *testing.T) {
	t.Run("here", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			obs := &recorder{}
			var log runLog
			s := newScheduler(t, locker(), scheduler.WithSeconds(), scheduler.WithObserver(obs.Observe),
				scheduler.WithLockAhead(300*time.Millisecond))
			// Each run is still going 300ms before the next tick.
			var other runLog
			mustAdd(t, s, "job", "* * * * * *", log.job(900*time.Millisecond))
			mustAdd(t, s, "other", "* * * * * *", other.job(0))
			stop := start(t, s)
			sleepUntil(t0.Add(4500 * time.Millisecond))
			stop()

			want := expectTicks(t0, t0.Add(4500*time.Millisecond), time.Second)
			for name, l := range map[string]*runLog{"job": &log, "other": &other} {
				if got := l.ticks(); !slices.EqualFunc(got, want, time.Time.Equal) {
					t.Errorf("ticks run by %s %v, want %v", name, got, want)
				}
			}
			if skips := obs.of("skipped"); len(skips) != 0 {
				t.Errorf("skipped ticks: %+v", skips)
			}
		})
	})
	t.Run("elsewhere", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			tick := t0.Add(2 * time.Second)
			ctx := context.Background()
			l := locker()
			// Another replica runs the previous tick until 100ms before
			// this one, so the lock-ahead 300ms before finds it held.
			lease, err := l.Acquire(ctx, scheduler.LockRequest{Job: "job", Tick: t0.Add(time.Second), TTL: time.Hour, Owner: "other"})
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				sleepUntil(tick.Add(-100 * time.Millisecond))
				if err := lease.Release(ctx, scheduler.Outcome{}); err != nil {
					t.Errorf("Release: %v", err)
				}
			}()

			obs := &recorder{}
			var log runLog
			s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithObserver(obs.Observe),
				scheduler.WithLockAhead(300*time.Millisecond))
			mustAdd(t, s, "job", "*/2 * * * * *", log.job(0))
			mustAdd(t, s, "other", "*/2 * * * * *", log.job(0))
			stop := start(t, s)
			sleepUntil(tick.Add(time.Second))
			stop()

			if got := log.ticks(); len(got) != 2 || !got[0].Equal(tick) || !got[1].Equal(tick) {
				t.Errorf("ticks run %v, want [%v] by each job", got, tick)
			}
			if skips := obs.of("skipped"); len(skips) != 0 {
				t.Errorf("skipped ticks: %+v", skips)
			}
			started := byJob(t, obs, "run_started", tick)
			if ev := started["job"]; ev.StartDelay != 0 || ev.Attempts != 2 {
				t.Errorf("job's run started %+v, want at the tick after 2 attempts", ev)
			}
			if n := l.AcquireAllCalls(); n != 1 {
				t.Errorf("%d AcquireAll calls, want 1", n)
			}
		})
	})
}

// aheadJob is a Scheduler with lock-ahead 300ms and one job, "job", due
// every 2s, whose first tick is 2s into the synctest bubble; the job
// records its runs in log.
type aheadJob struct {
	tick time.Time // the first tick
	l    *schedulertest.Locker
	obs  *recorder
	log  *runLog
	s    *scheduler.Scheduler
}

func newAheadJob(t *testing.T) *aheadJob {
	t.Helper()
	l := locker()
	return newAheadJobOn(t, l, l)
}

// newAheadJobOn is newAheadJob with the Scheduler on lk, which is base or
// wraps it.
func newAheadJobOn(t *testing.T, lk scheduler.Locker, base *schedulertest.Locker) *aheadJob {
	t.Helper()
	a := &aheadJob{tick: time.Now().Add(2 * time.Second), l: base, obs: &recorder{}, log: &runLog{}}
	a.s = newScheduler(t, lk, scheduler.WithSeconds(), scheduler.WithObserver(a.obs.Observe),
		scheduler.WithLockAhead(300*time.Millisecond))
	mustAdd(t, a.s, "job", "*/2 * * * * *", a.log.job(0))
	return a
}

// TestLockAheadRemoved checks that a lease won ahead for a job removed
// before its tick is released and runs nothing.
func TestLockAheadRemoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAheadJob(t)
		tick, l, log, s := a.tick, a.l, a.log, a.s
		stop := start(t, s)
		sleepUntil(tick.Add(-100 * time.Millisecond))
		if err := s.Remove("job"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		grants := l.Grants()
		if len(grants) != 1 || !grants[0].Released.Equal(tick.Add(-100*time.Millisecond)) {
			t.Errorf("grants %+v, want one, released when the job was removed", grants)
		}
		sleepUntil(tick.Add(time.Second))
		stop()
		if runs := log.all(); len(runs) != 0 {
			t.Errorf("runs %+v, want none", runs)
		}
	})
}

// TestLockAheadStop checks a stop between a tick's lock-ahead and the tick:
// Shutdown waits for the tick and runs it, as the tick is claimed for every
// replica; a hard stop (Run's context done) gives the lease up and reports
// the tick as skipped for it.
func TestLockAheadStop(t *testing.T) {
	t.Run("Shutdown", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a := newAheadJob(t)
			tick, l, log := a.tick, a.l, a.log
			stop := start(t, a.s)
			sleepUntil(tick.Add(-100 * time.Millisecond))
			stop() // waits for the run
			if !time.Now().Equal(tick) {
				t.Errorf("Shutdown returned %v after the tick, want at it", time.Since(tick))
			}
			if got := log.ticks(); len(got) != 1 || !got[0].Equal(tick) {
				t.Errorf("ticks run %v, want [%v]", got, tick)
			}
			if grants := l.Grants(); len(grants) != 1 || !grants[0].Released.Equal(tick) {
				t.Errorf("grants %+v, want one, released after the run", grants)
			}
		})
	})
	t.Run("hard stop", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			a := newAheadJob(t)
			tick, l, obs, log := a.tick, a.l, a.obs, a.log
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() { errc <- a.s.Run(ctx) }()
			sleepUntil(tick.Add(-100 * time.Millisecond))
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("Run returned %v, want context.Canceled", err)
			}
			if runs := log.all(); len(runs) != 0 {
				t.Errorf("runs %+v, want none", runs)
			}
			if grants := l.Grants(); len(grants) != 1 || !grants[0].Released.Equal(tick.Add(-100*time.Millisecond)) {
				t.Errorf("grants %+v, want one, released at the stop", grants)
			}
			skips := obs.of("skipped")
			if len(skips) != 1 || skips[0].Skip != "lease_lost" || !skips[0].Tick.Equal(tick) {
				t.Errorf("skips %+v, want the tick skipped as lease_lost", skips)
			}
		})
	})
}

// TestLockAheadCatchUp checks that lock-ahead leaves catch-up alone: a
// replica started 40s after a minute's tick, with a catch-up window of 5
// minutes, runs that tick at once, then locks the next one ahead, by at
// most half the 20s left to it.
func TestLockAheadCatchUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now() // a whole minute in the bubble
		l := locker()
		obs := &recorder{}
		var log runLog
		s := newScheduler(t, l, scheduler.WithObserver(obs.Observe), scheduler.WithLockAhead(30*time.Second))
		mustAdd(t, s, "job", "* * * * *", log.job(0), scheduler.WithCatchUp(5*time.Minute))
		sleepUntil(t0.Add(40 * time.Second))
		stop := start(t, s)
		sleepUntil(t0.Add(80 * time.Second)) // before the next lock-ahead, at 1:30
		stop()

		want := []time.Time{t0, t0.Add(time.Minute)}
		if got := log.ticks(); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("ticks run %v, want %v", got, want)
		}
		if skips := obs.of("skipped"); len(skips) != 0 {
			t.Errorf("skipped ticks: %+v", skips)
		}
		grants := l.Grants()
		if len(grants) != 2 || !grants[1].Acquired.Equal(t0.Add(50*time.Second)) {
			t.Errorf("grants %+v, want the second won at 0:50", grants)
		}
	})
}

// TestLockAheadRemovedWhileStopping checks that a job removed after
// Shutdown began, while its lease won ahead waits for the tick, does not
// run: the lease is released at the tick.
func TestLockAheadRemovedWhileStopping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAheadJob(t)
		stop := start(t, a.s)
		sleepUntil(a.tick.Add(-200 * time.Millisecond))
		stopped := make(chan struct{})
		go func() {
			defer close(stopped)
			stop()
		}()
		sleepUntil(a.tick.Add(-100 * time.Millisecond))
		if err := a.s.Remove("job"); err != nil {
			t.Fatal(err)
		}
		<-stopped
		if runs := a.log.all(); len(runs) != 0 {
			t.Errorf("runs %+v, want none", runs)
		}
		if grants := a.l.Grants(); len(grants) != 1 || grants[0].Released.IsZero() {
			t.Errorf("grants %+v, want one, released", grants)
		}
	})
}

// heldAgain is a Locker whose attempts made once armed are refused as held
// by another replica, as when a lease lost before its tick had not put its
// mark on a majority and another replica won the tick.
type heldAgain struct {
	*schedulertest.Locker
	mu    sync.Mutex
	armed bool
}

func (h *heldAgain) arm(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.armed = on
}

func (h *heldAgain) Acquire(ctx context.Context, req scheduler.LockRequest) (scheduler.Lease, error) {
	h.mu.Lock()
	armed := h.armed
	h.mu.Unlock()
	if armed {
		return nil, fmt.Errorf("test: job %q: %w", req.Job, mutex.ErrHeld)
	}
	return h.Locker.Acquire(ctx, req)
}

// TestLockAheadLeaseLost checks that a lease lost between its lock-ahead and
// its tick runs no job: it is released and the tick attempted again at the
// tick. If the locker refuses it as claimed (by the lost lease's mark), the
// tick is reported as skipped for its lost lease; if another replica won
// it, as held elsewhere.
func TestLockAheadLeaseLost(t *testing.T) {
	for _, elsewhere := range []bool{false, true} {
		t.Run(map[bool]string{false: "claimed", true: "won elsewhere"}[elsewhere], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &heldAgain{Locker: locker()}
				a := newAheadJobOn(t, l, l.Locker)
				stop := start(t, a.s)
				sleepUntil(a.tick.Add(-100 * time.Millisecond))
				l.arm(elsewhere)
				if !l.LoseLease("job") {
					t.Fatal("no lease held 100ms before the tick")
				}
				sleepUntil(a.tick.Add(time.Second))
				stop()

				if runs := a.log.all(); len(runs) != 0 {
					t.Errorf("runs %+v, want none", runs)
				}
				if grants := l.Grants(); len(grants) != 1 || !grants[0].Lost || !grants[0].Acquired.Equal(a.tick.Add(-300*time.Millisecond)) {
					t.Errorf("grants %+v, want one, won 300ms ahead and lost", grants)
				}
				skips := a.obs.of("skipped")
				if len(skips) != 1 || skips[0].Attempts != 2 {
					t.Fatalf("skips %+v, want one after 2 attempts", skips)
				}
				switch sk := skips[0]; {
				case elsewhere && sk.Skip != "held":
					t.Errorf("skip %+v, want held", sk)
				case !elsewhere && (sk.Skip != "lease_lost" ||
					!errors.Is(sk.Err, mutex.ErrLost) || !errors.Is(sk.Err, mutex.ErrAlreadyRun)):
					t.Errorf("skip %+v, want lease_lost, with the loss and the refusal", sk)
				}
			})
		})
	}
}

// refusing is a BatchLocker that refuses every attempt for the jobs in
// refuse with their error, and passes the others to an in-memory locker.
type refusing struct {
	*schedulertest.Locker
	refuse map[string]error
}

func (r *refusing) Acquire(ctx context.Context, req scheduler.LockRequest) (scheduler.Lease, error) {
	if err := r.refuse[req.Job]; err != nil {
		return nil, fmt.Errorf("test: job %q: %w", req.Job, err)
	}
	return r.Locker.Acquire(ctx, req)
}

func (r *refusing) AcquireAll(ctx context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	out := make([]scheduler.LockResult, len(reqs))
	for i, req := range reqs {
		out[i].Lease, out[i].Err = r.Acquire(ctx, req)
	}
	return out
}

// TestLockAheadBatchRefusalsAhead checks that, in a batch locked ahead, a
// tick refused as an overlap (asked again at the tick) does not hold up the
// handling of the batch's other ticks: a refusal as held elsewhere is
// reported at the lock-ahead, not at the tick. The batch's ticks come in
// the order of a map, new at every tick, so over 10 ticks an overlap
// handled first, in line, would delay the other's report at least once
// but with a chance of 2⁻¹⁰.
func TestLockAheadBatchRefusalsAhead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &refusing{Locker: locker(), refuse: map[string]error{
			"overlap": scheduler.ErrOverlap,
			"held":    mutex.ErrHeld,
		}}
		var mu sync.Mutex
		reported := map[int64]time.Time{} // held's skipped ticks (Unix), when reported
		obs := observerFunc(func(ev scheduler.Event) {
			if ev.Kind == "skipped" && ev.Job == "held" {
				mu.Lock()
				reported[ev.Tick.Unix()] = time.Now()
				mu.Unlock()
			}
		})
		s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithObserver(obs.Observe),
			scheduler.WithLockAhead(500*time.Millisecond))
		var rl runLog
		mustAdd(t, s, "overlap", "* * * * * *", rl.job(0))
		mustAdd(t, s, "held", "* * * * * *", rl.job(0))
		stop := start(t, s)
		first := time.Now().Truncate(time.Second).Add(time.Second)
		sleepUntil(first.Add(10 * time.Second))
		stop()

		mu.Lock()
		defer mu.Unlock()
		for tick := first; tick.Before(first.Add(10 * time.Second)); tick = tick.Add(time.Second) {
			at, ok := reported[tick.Unix()]
			switch {
			case !ok:
				t.Errorf("held's tick %v not reported", tick)
			case !at.Equal(tick.Add(-500 * time.Millisecond)):
				t.Errorf("held's tick %v reported at %v, want at its lock-ahead, 500ms before", tick, at)
			}
		}
		if runs := rl.all(); len(runs) != 0 {
			t.Errorf("runs %+v, want none", runs)
		}
	})
}
