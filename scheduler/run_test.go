package scheduler_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestOverlapIsSkipped runs a 2.5s job every second on two replicas: the
// ticks that come while it runs are skipped, here and on the other replica,
// and two runs never overlap.
func TestOverlapIsSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := locker()
		obs := &recorder{}
		var log runLog
		var running, maxRunning atomic.Int32
		job := scheduler.JobFunc(func(ctx context.Context, info scheduler.RunInfo) error {
			n := running.Add(1)
			defer running.Add(-1)
			for m := maxRunning.Load(); n > m && !maxRunning.CompareAndSwap(m, n); m = maxRunning.Load() {
			}
			log.add(info)
			time.Sleep(2500 * time.Millisecond)
			return nil
		})
		var stops []func()
		for _, id := range []string{"a", "b"} {
			s := newScheduler(t, l, scheduler.WithInstanceID(id), scheduler.WithObserver(obs.Observe))
			mustAdd(t, s, "slow", "@every 1s", job)
			stops = append(stops, start(t, s))
		}
		sleepUntil(t0.Add(10*time.Second + 500*time.Millisecond))
		stopAll(stops...)

		if m := maxRunning.Load(); m != 1 {
			t.Errorf("at most %d runs at once, want 1", m)
		}
		// Ticks 1s, 4s, 7s, 10s run (each run covers the next two ticks).
		want := []time.Time{t0.Add(1 * time.Second), t0.Add(4 * time.Second), t0.Add(7 * time.Second), t0.Add(10 * time.Second)}
		if got := log.ticks(); !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("ran ticks %v, want %v", got, want)
		}
		// Per replica, the six other ticks are overlaps; the run ticks are
		// overlaps (mutex.ErrHeld for the same tick) for the losing replica.
		if got, want := len(obs.skips("overlap")), 2*6; got != want {
			t.Errorf("%d overlap skips, want %d", got, want)
		}
		if got, want := len(obs.skips("held")), 4; got != want {
			t.Errorf("%d held-elsewhere skips, want %d", got, want)
		}
	})
}

// TestMisfire steps a replica's clock forward: ticks it notices later than
// their grace are skipped as misfires.
func TestMisfire(t *testing.T) {
	t.Run("late tick", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			var offset atomic.Int64
			clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			obs := &recorder{}
			var log runLog
			s := newScheduler(t, locker(), scheduler.WithClock(clock), scheduler.WithObserver(obs.Observe))
			mustAdd(t, s, "hourly", "@hourly", log.job(0))
			stop := start(t, s)
			// At 00:55:30 the clock jumps by 10 minutes; the loop notices it
			// at 00:56 (01:06 by the clock), when the 01:00 tick is six
			// minutes late.
			sleepUntil(t0.Add(55*time.Minute + 30*time.Second))
			offset.Store(int64(10 * time.Minute))
			sleepUntil(t0.Add(58 * time.Minute))
			stop()

			if runs := log.all(); len(runs) != 0 {
				t.Errorf("ran %v, want nothing", runs)
			}
			misfires := obs.skips("misfire")
			if len(misfires) != 1 || !misfires[0].Tick.Equal(t0.Add(time.Hour)) {
				t.Errorf("misfires %v, want the 01:00 tick", misfires)
			}
			if e := s.Entries()[0]; e.LastSkip != "misfire" || !e.Prev.Equal(t0.Add(time.Hour)) {
				t.Errorf("entry %+v, want the 01:00 tick skipped as misfire", e)
			}
		})
	})
	t.Run("within grace", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			var offset atomic.Int64
			clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			obs := &recorder{}
			var log runLog
			s := newScheduler(t, locker(), scheduler.WithClock(clock), scheduler.WithObserver(obs.Observe))
			mustAdd(t, s, "hourly", "@hourly", log.job(0), scheduler.WithMisfireGrace(10*time.Minute))
			stop := start(t, s)
			sleepUntil(t0.Add(55*time.Minute + 30*time.Second))
			offset.Store(int64(10 * time.Minute))
			sleepUntil(t0.Add(58 * time.Minute))
			stop()

			if got := log.ticks(); len(got) != 1 || !got[0].Equal(t0.Add(time.Hour)) {
				t.Errorf("ran %v, want the 01:00 tick", got)
			}
			started := obs.of("run_started")
			if len(started) != 1 || started[0].StartDelay != 6*time.Minute {
				t.Errorf("run started events %+v, want one 6 minutes late", started)
			}
		})
	})
	t.Run("several ticks due", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			var offset atomic.Int64
			clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			obs := &recorder{}
			var log runLog
			s := newScheduler(t, locker(), scheduler.WithClock(clock), scheduler.WithObserver(obs.Observe))
			mustAdd(t, s, "minutely", "* * * * *", log.job(0))
			stop := start(t, s)
			// At 00:00:30 the clock jumps by 5 minutes: when the timer fires
			// at 00:01 (00:06 by the clock), the ticks of 00:01 to 00:05 are
			// missed and 00:06 runs.
			sleepUntil(t0.Add(30 * time.Second))
			offset.Store(int64(5 * time.Minute))
			sleepUntil(t0.Add(90 * time.Second))
			stop()

			if got := log.ticks(); len(got) != 1 || !got[0].Equal(t0.Add(6*time.Minute)) {
				t.Errorf("ran %v, want the 00:06 tick", got)
			}
			var missed []time.Time
			for _, ev := range obs.skips("misfire") {
				missed = append(missed, ev.Tick)
			}
			if want := expectTicks(t0, t0.Add(5*time.Minute), time.Minute); !slices.EqualFunc(missed, want, time.Time.Equal) {
				t.Errorf("misfires %v, want %v", missed, want)
			}
		})
	})
	t.Run("clock stepped by months", func(t *testing.T) {
		// Ninety days of an every-second job: 7.8 million missed ticks.
		// The latest runs, the first 100 are reported one by one, and the
		// log says there were more; the loop does not walk them all.
		synctest.Test(t, func(t *testing.T) {
			t0 := time.Now()
			var offset atomic.Int64
			clock := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			obs := &recorder{}
			var logs lockedBuffer
			var log runLog
			s := newScheduler(t, locker(), scheduler.WithClock(clock), scheduler.WithObserver(obs.Observe), scheduler.WithSeconds(),
				scheduler.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
			mustAdd(t, s, "secondly", "@every 1s", log.job(0))
			stop := start(t, s)
			sleepUntil(t0.Add(1500 * time.Millisecond))
			const step = 90 * 24 * time.Hour
			offset.Store(int64(step))
			sleepUntil(t0.Add(2100 * time.Millisecond))
			stop()

			if got := log.ticks(); len(got) != 2 || !got[1].Equal(t0.Add(step+2*time.Second)) {
				t.Errorf("ran %v, want the first tick and the one the stepped clock reached", got)
			}
			missed := obs.skips("misfire")
			if len(missed) != 100 || !missed[0].Tick.Equal(t0.Add(2*time.Second)) {
				t.Errorf("%d misfires reported (first %v), want the first 100, from %v", len(missed), missed[0].Tick, t0.Add(2*time.Second))
			}
			if !strings.Contains(logs.String(), "missed=\"more than 100") {
				t.Errorf("no log line saying more than 100 ticks were missed:\n%s", logs.String())
			}
		})
	})
}

// TestCatchUp starts a replica at 00:45 (too late to catch up on 00:00),
// makes the locker fail from 00:59 to 01:10 and checks what happens to the
// 01:00 tick of an hourly job.
func TestCatchUp(t *testing.T) {
	tests := []struct {
		name    string
		opts    []scheduler.JobOption
		wantRun bool
	}{
		{"off", nil, false},
		{"on", []scheduler.JobOption{scheduler.WithCatchUp(30 * time.Minute)}, true},
		{"window too short", []scheduler.JobOption{scheduler.WithCatchUp(5 * time.Minute)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				l := locker()
				obs := &recorder{}
				var log runLog
				s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
				mustAdd(t, s, "hourly", "@hourly", log.job(0), tt.opts...)
				sleepUntil(t0.Add(45 * time.Minute))
				stop := start(t, s)
				sleepUntil(t0.Add(59 * time.Minute))
				l.FailNext(1 << 30)
				sleepUntil(t0.Add(70 * time.Minute))
				l.FailNext(0)
				sleepUntil(t0.Add(100 * time.Minute))
				stop()

				tick := t0.Add(time.Hour)
				retries := obs.of("lock_retry")
				if len(retries) == 0 || !errors.Is(retries[0].Err, mutex.ErrNoQuorum) {
					t.Errorf("lock retries %v, want some with mutex.ErrNoQuorum", retries)
				}
				for _, ev := range retries {
					if !ev.Tick.Equal(tick) {
						t.Errorf("retry of tick %v", ev.Tick)
					}
				}
				noQuorum := obs.skips("no_quorum")
				if tt.wantRun {
					if got := log.ticks(); len(got) != 1 || !got[0].Equal(tick) {
						t.Fatalf("ran %v, want the 01:00 tick once", got)
					}
					ev := obs.of("run_started")[0]
					if ev.StartDelay < 10*time.Minute || ev.StartDelay > 11*time.Minute || ev.Attempts < 2 {
						t.Errorf("run started %v after the tick after %d attempts, want 10-11 minutes and several attempts", ev.StartDelay, ev.Attempts)
					}
					if len(noQuorum) != 0 {
						t.Errorf("no-quorum skips %v, want none", noQuorum)
					}
					return
				}
				if got := log.ticks(); len(got) != 0 {
					t.Errorf("ran %v, want nothing", got)
				}
				if len(noQuorum) != 1 || !noQuorum[0].Tick.Equal(tick) || !errors.Is(noQuorum[0].Err, mutex.ErrNoQuorum) {
					t.Errorf("no-quorum skips %+v, want the 01:00 tick with mutex.ErrNoQuorum", noQuorum)
				}
				if e := s.Entries()[0]; e.LastSkip != "no_quorum" || !errors.Is(e.LastErr, mutex.ErrNoQuorum) {
					t.Errorf("entry %+v, want the last skip to be no_quorum", e)
				}
			})
		})
	}
}

// TestCatchUpAtStart starts replicas after a tick: with catch-up, the first
// to start runs it late, and the next is told it already ran.
func TestCatchUpAtStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now() // 00:00, an hourly tick
		l := locker()
		obs := &recorder{}
		var log runLog
		newReplica := func(id string, opts ...scheduler.JobOption) func() {
			s := newScheduler(t, l, scheduler.WithInstanceID(id), scheduler.WithObserver(obs.Observe))
			mustAdd(t, s, "hourly", "@hourly", log.job(time.Minute), opts...)
			return start(t, s)
		}
		sleepUntil(t0.Add(5 * time.Minute))
		stopA := newReplica("a", scheduler.WithCatchUp(10*time.Minute))
		synctest.Wait()
		stopB := newReplica("b", scheduler.WithCatchUp(10*time.Minute))
		stopC := newReplica("c") // no catch-up: waits for 01:00
		sleepUntil(t0.Add(30 * time.Minute))
		stopD := newReplica("d", scheduler.WithCatchUp(10*time.Minute)) // 00:00 is too old
		synctest.Wait()
		stopAll(stopA, stopB, stopC, stopD)

		runs := log.all()
		if len(runs) != 1 || !runs[0].Tick.Equal(t0) || runs[0].Instance != "a" {
			t.Fatalf("runs %+v, want the 00:00 tick on a", runs)
		}
		if started := obs.of("run_started"); started[0].StartDelay != 5*time.Minute {
			t.Errorf("start delay %v, want 5m", started[0].StartDelay)
		}
		// b started while a was running the tick.
		if skips := obs.skips("held"); len(skips) != 1 || skips[0].Instance != "b" || !skips[0].Tick.Equal(t0) {
			t.Errorf("held skips %+v, want the 00:00 tick on b", skips)
		}
		if skips := obs.of("skipped"); len(skips) != 1 {
			t.Errorf("skips %+v, want only b's", skips)
		}
	})
}

// TestCatchUpAtStartAfterRun checks that a tick run before is not run again
// by a replica that starts with catch-up.
func TestCatchUpAtStartAfterRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := locker()
		obs := &recorder{}
		var log runLog
		a := newScheduler(t, l, scheduler.WithInstanceID("a"), scheduler.WithObserver(obs.Observe))
		mustAdd(t, a, "hourly", "@hourly", log.job(0), scheduler.WithCatchUp(10*time.Minute))
		stopA := start(t, a)
		sleepUntil(t0.Add(5 * time.Minute))
		b := newScheduler(t, l, scheduler.WithInstanceID("b"), scheduler.WithObserver(obs.Observe))
		mustAdd(t, b, "hourly", "@hourly", log.job(0), scheduler.WithCatchUp(10*time.Minute))
		stopB := start(t, b)
		synctest.Wait()
		stopAll(stopA, stopB)

		if runs := log.all(); len(runs) != 1 || runs[0].Instance != "a" || !runs[0].Tick.Equal(t0) {
			t.Errorf("runs %+v, want the 00:00 tick on a only", runs)
		}
		if skips := obs.skips("already_run"); len(skips) != 1 || skips[0].Instance != "b" {
			t.Errorf("already-ran skips %+v, want one on b", skips)
		}
	})
}

// TestRetryWithinGrace checks that a tick whose first lock attempts reach
// no decision is retried with jitter and runs within its grace.
func TestRetryWithinGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := locker()
		obs := &recorder{}
		var log runLog
		s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
		mustAdd(t, s, "job", "* * * * *", log.job(0))
		stop := start(t, s)
		l.FailNext(5)
		sleepUntil(t0.Add(90 * time.Second))
		stop()

		if got := log.ticks(); len(got) != 1 || !got[0].Equal(t0.Add(time.Minute)) {
			t.Fatalf("ran %v, want the 00:01 tick", got)
		}
		retries := obs.of("lock_retry")
		if len(retries) != 5 {
			t.Fatalf("%d retries, want 5", len(retries))
		}
		started := obs.of("run_started")[0]
		if started.Attempts != 6 {
			t.Errorf("run started after %d attempts, want 6", started.Attempts)
		}
		// Delays are 10-60ms, 10-120ms, 10-240ms, 10-480ms, 10-960ms.
		if maxDelay := (60 + 120 + 240 + 480 + 960) * time.Millisecond; started.StartDelay < 5*10*time.Millisecond || started.StartDelay > maxDelay {
			t.Errorf("run started %v after its tick, want between 50ms and %v", started.StartDelay, maxDelay)
		}
	})
}

// TestNoQuorumRetriesEndAtNextTick checks that lock retries for a tick stop
// when the next tick is due, if it comes before the grace ends.
func TestNoQuorumRetriesEndAtNextTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := locker()
		obs := &recorder{}
		var log runLog
		s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
		mustAdd(t, s, "job", "@every 10s", log.job(0))
		stop := start(t, s)
		l.FailNext(1 << 30)
		sleepUntil(t0.Add(35 * time.Second))
		l.FailNext(0)
		sleepUntil(t0.Add(38 * time.Second))
		stop()

		var skipped []time.Time
		for _, ev := range obs.skips("no_quorum") {
			skipped = append(skipped, ev.Tick)
			if !errors.Is(ev.Err, mutex.ErrNoQuorum) || !strings.Contains(fmt.Sprint(ev.Err), "retries ended: scheduler: a newer tick") {
				t.Errorf("skip of %v: error %v, want the locker's no-quorum error and that retries ended for a newer tick", ev.Tick, ev.Err)
			}
		}
		if want := []time.Time{t0.Add(10 * time.Second), t0.Add(20 * time.Second)}; !slices.EqualFunc(skipped, want, time.Time.Equal) {
			t.Errorf("no-quorum skips %v, want %v", skipped, want)
		}
		if got := log.ticks(); len(got) != 1 || !got[0].Equal(t0.Add(30*time.Second)) {
			t.Errorf("ran %v, want the 30s tick", got)
		}
	})
}

// TestLockLost loses the lease during a run: the job's context is
// cancelled with mutex.ErrLost and the run reported as lock_lost.
func TestLockLost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := locker()
		obs := &recorder{}
		cause := make(chan error, 1)
		s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
		mustAdd(t, s, "job", "@every 1m", scheduler.JobFunc(func(ctx context.Context, info scheduler.RunInfo) error {
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return nil // whatever the job returns
		}))
		stop := start(t, s)
		time.Sleep(time.Minute)
		synctest.Wait()
		if !l.LoseLease("job") {
			t.Fatal("no lease held during the run")
		}
		if err := <-cause; !errors.Is(err, mutex.ErrLost) {
			t.Errorf("job's context cause = %v, want mutex.ErrLost", err)
		}
		synctest.Wait()
		fin := obs.finished()
		if len(fin) != 1 || fin[0].Result != "lock_lost" || !errors.Is(fin[0].Err, mutex.ErrLost) {
			t.Errorf("finished events %+v, want one lock_lost with mutex.ErrLost", fin)
		}
		if e := s.Entries()[0]; e.LastResult != "lock_lost" || e.Running {
			t.Errorf("entry %+v, want the last result lock_lost", e)
		}
		stop()
	})
}

// TestPanic checks that a panicking job is recorded with its stack and that
// the next ticks run.
func TestPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		obs := &recorder{}
		var calls atomic.Int32
		s := newScheduler(t, locker(), scheduler.WithObserver(obs.Observe))
		mustAdd(t, s, "job", "@every 1s", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error {
			if calls.Add(1) == 1 {
				panicInJob()
			}
			return nil
		}))
		stop := start(t, s)
		sleepUntil(t0.Add(3500 * time.Millisecond))
		stop()

		fin := obs.finished()
		if len(fin) != 3 {
			t.Fatalf("%d runs finished, want 3", len(fin))
		}
		var pe *scheduler.PanicError
		if fin[0].Result != "panic" || !errors.As(fin[0].Err, &pe) {
			t.Fatalf("first run: %s, %v; want panic with a *PanicError", fin[0].Result, fin[0].Err)
		}
		if pe.Job != "job" || pe.Value != "boom" || !bytes.Contains(pe.Stack, []byte("panicInJob")) {
			t.Errorf("PanicError{Job: %q, Value: %v}, stack:\n%s\nwant the job, the value and the panicking function", pe.Job, pe.Value, pe.Stack)
		}
		for _, ev := range fin[1:] {
			if ev.Result != "success" {
				t.Errorf("run of %v: %s, want success", ev.Tick, ev.Result)
			}
		}
	})
}

func panicInJob() { panic("boom") }

// TestJobResults checks how runs are classified.
func TestJobResults(t *testing.T) {
	errJob := errors.New("job failed")
	tests := []struct {
		name     string
		opts     []scheduler.JobOption
		job      func(ctx context.Context) error
		want     string
		wantErrs []error
	}{
		{"success", nil, func(context.Context) error { return nil }, "success", nil},
		{"failure", nil, func(context.Context) error { return errJob }, "failure", []error{errJob}},
		{"timeout", []scheduler.JobOption{scheduler.WithRunTimeout(2 * time.Second)}, func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		}, "timeout", []error{scheduler.ErrRunTimeout, context.DeadlineExceeded}},
		{"done in time", []scheduler.JobOption{scheduler.WithRunTimeout(2 * time.Second)}, func(ctx context.Context) error {
			time.Sleep(time.Second)
			return ctx.Err()
		}, "success", nil},
		{"success despite timeout", []scheduler.JobOption{scheduler.WithRunTimeout(2 * time.Second)}, func(ctx context.Context) error {
			<-ctx.Done()
			return nil
		}, "success", nil},
		{"goexit", nil, func(context.Context) error {
			runtime.Goexit()
			return nil
		}, "failure", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				obs := &recorder{}
				s := newScheduler(t, locker(), scheduler.WithObserver(obs.Observe))
				cause := make(chan error, 1)
				mustAdd(t, s, "job", "@every 1m", scheduler.JobFunc(func(ctx context.Context, _ scheduler.RunInfo) error {
					defer func() { cause <- context.Cause(ctx) }()
					return tt.job(ctx)
				}), tt.opts...)
				stop := start(t, s)
				time.Sleep(90 * time.Second)
				stop()

				fin := obs.finished()
				if len(fin) != 1 {
					t.Fatalf("%d runs finished, want 1", len(fin))
				}
				if fin[0].Result != tt.want {
					t.Errorf("result %s (%v), want %s", fin[0].Result, fin[0].Err, tt.want)
				}
				if tt.want == "success" && fin[0].Err != nil {
					t.Errorf("error %v with success", fin[0].Err)
				}
				if tt.want != "success" && fin[0].Err == nil {
					t.Errorf("no error with %s", fin[0].Result)
				}
				for _, want := range tt.wantErrs {
					if !errors.Is(fin[0].Err, want) {
						t.Errorf("error %v does not match %v", fin[0].Err, want)
					}
				}
				if fin[0].Duration <= 0 && tt.name == "timeout" {
					t.Errorf("duration %v", fin[0].Duration)
				}
				if tt.name == "timeout" {
					if err := <-cause; !errors.Is(err, scheduler.ErrRunTimeout) {
						t.Errorf("job's context cause = %v, want ErrRunTimeout", err)
					}
					if fin[0].Duration != 2*time.Second {
						t.Errorf("duration %v, want 2s", fin[0].Duration)
					}
				}
			})
		})
	}
}
