package scheduler_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

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
				s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithObserver(obs), scheduler.WithLockAhead(tt.lead))
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
				started := obs.of(scheduler.EventRunStarted)
				if len(started) != 2*len(ticks) {
					t.Errorf("%d runs started, want %d", len(started), 2*len(ticks))
				}
				for _, ev := range started {
					if ev.StartDelay != 0 {
						t.Errorf("job %s tick %v started %v after its tick, want at it", ev.Job, ev.Tick, ev.StartDelay)
					}
				}
				if skips := obs.of(scheduler.EventSkipped); len(skips) != 0 {
					t.Errorf("skipped ticks: %+v", skips)
				}
			})
		})
	}
}

// TestLockAheadPreviousRun checks that a tick whose previous run is still
// going when its lock-ahead begins, here or on another replica, is decided
// at the tick, when that run is over, rather than skipped as an overlap.
func TestLockAheadPreviousRun(t *testing.T) {
	t.Run("here", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			obs := &recorder{}
			var log runLog
			s := newScheduler(t, locker(), scheduler.WithSeconds(), scheduler.WithObserver(obs),
				scheduler.WithLockAhead(300*time.Millisecond))
			// Each run is still going 300ms before the next tick.
			mustAdd(t, s, "job", "* * * * * *", log.job(900*time.Millisecond))
			stop := start(t, s)
			sleepUntil(t0.Add(4500 * time.Millisecond))
			stop()

			want := expectTicks(t0, t0.Add(4500*time.Millisecond), time.Second)
			if got := log.ticks(); !slices.EqualFunc(got, want, time.Time.Equal) {
				t.Errorf("ticks run %v, want %v", got, want)
			}
			if skips := obs.of(scheduler.EventSkipped); len(skips) != 0 {
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
				if err := lease.Release(ctx); err != nil {
					t.Errorf("Release: %v", err)
				}
			}()

			obs := &recorder{}
			var log runLog
			s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithObserver(obs),
				scheduler.WithLockAhead(300*time.Millisecond))
			mustAdd(t, s, "job", "*/2 * * * * *", log.job(0))
			stop := start(t, s)
			sleepUntil(tick.Add(time.Second))
			stop()

			if got := log.ticks(); len(got) != 1 || !got[0].Equal(tick) {
				t.Errorf("ticks run %v, want [%v]", got, tick)
			}
			if skips := obs.of(scheduler.EventSkipped); len(skips) != 0 {
				t.Errorf("skipped ticks: %+v", skips)
			}
			started := obs.of(scheduler.EventRunStarted)
			if len(started) != 1 || started[0].StartDelay != 0 || started[0].Attempts != 2 {
				t.Errorf("runs started %+v, want one at the tick after 2 attempts", started)
			}
		})
	})
}

// TestLockAheadLeaseLost checks that a lease lost between its lock-ahead and
// its tick runs no job: it is released and the tick is attempted again at
// the tick, where the locker decides (here: already claimed).
func TestLockAheadLeaseLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		tick := t0.Add(2 * time.Second)
		l := locker()
		obs := &recorder{}
		var log runLog
		s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithObserver(obs),
			scheduler.WithLockAhead(300*time.Millisecond))
		mustAdd(t, s, "job", "*/2 * * * * *", log.job(0))
		stop := start(t, s)
		sleepUntil(tick.Add(-100 * time.Millisecond))
		if !l.LoseLease("job") {
			t.Fatal("no lease held 100ms before the tick")
		}
		sleepUntil(tick.Add(time.Second))
		stop()

		if runs := log.all(); len(runs) != 0 {
			t.Errorf("runs %+v, want none", runs)
		}
		if grants := l.Grants(); len(grants) != 1 || !grants[0].Lost || !grants[0].Acquired.Equal(tick.Add(-300*time.Millisecond)) {
			t.Errorf("grants %+v, want one, won 300ms ahead and lost", grants)
		}
		skips := obs.skips(scheduler.SkipAlreadyRun)
		if len(skips) != 1 || skips[0].Attempts != 2 {
			t.Errorf("already-run skips %+v, want one after 2 attempts", skips)
		}
	})
}

// TestLockAheadRemoved checks that a lease won ahead for a job removed
// before its tick is released and runs nothing.
func TestLockAheadRemoved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		tick := t0.Add(2 * time.Second)
		l := locker()
		var log runLog
		s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithLockAhead(300*time.Millisecond))
		mustAdd(t, s, "job", "*/2 * * * * *", log.job(0))
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
