package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// span is one run of a job, as the job saw it.
type span struct {
	info       scheduler.RunInfo
	start, end time.Time
	cause      error // context.Cause of the job's context when it returned
}

// spans records the runs of jobs, in the order they ended.
type spans struct {
	mu   sync.Mutex
	runs []span
}

// job returns a job that takes d, or, if d is 0, runs until its context is
// done; if ignore is true, it ignores its context.
func (s *spans) job(d time.Duration, ignore bool) scheduler.JobFunc {
	return func(ctx context.Context, info scheduler.RunInfo) error {
		sp := span{info: info, start: time.Now()}
		var err error
		switch {
		case d == 0:
			<-ctx.Done()
			err = context.Cause(ctx)
		case ignore:
			time.Sleep(d)
		default:
			select {
			case <-time.After(d):
			case <-ctx.Done():
				err = context.Cause(ctx)
			}
		}
		sp.end, sp.cause = time.Now(), context.Cause(ctx)
		s.mu.Lock()
		s.runs = append(s.runs, sp)
		s.mu.Unlock()
		return err
	}
}

// of returns the runs of job, by tick.
func (s *spans) of(job string) []span {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []span
	for _, sp := range s.runs {
		if sp.info.Job == job {
			out = append(out, sp)
		}
	}
	slices.SortFunc(out, func(a, b span) int { return a.info.Tick.Compare(b.info.Tick) })
	return out
}

// checkSerial fails unless runs, by tick, ran one after the other, each
// tick once, with increasing fences.
func checkSerial(t *testing.T, runs []span) {
	t.Helper()
	for i := 1; i < len(runs); i++ {
		a, b := runs[i-1], runs[i]
		if !b.info.Tick.After(a.info.Tick) || b.info.Fence <= a.info.Fence || b.start.Before(a.end) {
			t.Errorf("run of tick %s (fence %d, %s-%s) after run of tick %s (fence %d, %s-%s)",
				hm(b.info.Tick), b.info.Fence, hm(b.start), hm(b.end), hm(a.info.Tick), a.info.Fence, hm(a.start), hm(a.end))
		}
	}
}

// hm formats a time of a synctest bubble as minutes and seconds.
func hm(t time.Time) string { return t.Format("04:05.000") }

// skippedTicks returns the ticks of job skipped with reason.
func skippedTicks(rec *recorder, job, reason string) []time.Time {
	var out []time.Time
	for _, ev := range rec.skips(reason) {
		if ev.Job == job {
			out = append(out, ev.Tick)
		}
	}
	return out
}

// TestOverlapQueueOne: a 95 s job every minute under OverlapQueueOne runs
// the tick that came during its run as soon as the run ends; of two ticks
// that came during one run, the newer waits and the older is skipped as
// overlap. Also with the ticks dispatched ahead (WithLockAhead), and with
// two such jobs whose ticks are locked in one batch.
func TestOverlapQueueOne(t *testing.T) {
	m := func(min, sec int) time.Duration {
		return time.Duration(min)*time.Minute + time.Duration(sec)*time.Second
	}
	atTick := []time.Duration{m(1, 0), m(2, 0), m(4, 0), m(5, 0), m(7, 0), m(8, 0)}
	for _, tc := range []struct {
		name    string
		opts    []scheduler.Option
		jobs    []string
		ticks   []time.Duration // of the runs, after the start
		starts  []time.Duration
		skipped []time.Duration // ticks skipped as overlap
	}{
		{"at the tick", nil, []string{"job"}, atTick,
			[]time.Duration{m(1, 0), m(2, 35), m(4, 10), m(5, 45), m(7, 20), m(8, 55)},
			[]time.Duration{m(3, 0), m(6, 0), m(9, 0)}},
		// The tick at 9 min replaces the one waiting at 8 min 50 s, its
		// lock-ahead, and runs at its tick, the run of 7 min over.
		{"lock-ahead", []scheduler.Option{scheduler.WithLockAhead(10 * time.Second)}, []string{"job"},
			[]time.Duration{m(1, 0), m(2, 0), m(4, 0), m(5, 0), m(7, 0), m(9, 0)},
			[]time.Duration{m(1, 0), m(2, 35), m(4, 10), m(5, 45), m(7, 20), m(9, 0)},
			[]time.Duration{m(3, 0), m(6, 0), m(8, 0)}},
		{"batch", nil, []string{"a", "b"}, atTick,
			[]time.Duration{m(1, 0), m(2, 35), m(4, 10), m(5, 45), m(7, 20), m(8, 55)},
			[]time.Duration{m(3, 0), m(6, 0), m(9, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				rec := &recorder{}
				var log spans
				s := newScheduler(t, locker(), append(tc.opts, scheduler.WithObserver(rec.Observe))...)
				for _, job := range tc.jobs {
					mustAdd(t, s, job, "* * * * *", log.job(95*time.Second, false), scheduler.WithOverlap(scheduler.OverlapQueueOne))
				}
				stop := start(t, s)
				sleepUntil(t0.Add(9*time.Minute + 45*time.Second))
				stop()

				for _, job := range tc.jobs {
					runs := log.of(job)
					var ticks, starts []time.Duration
					for _, r := range runs {
						ticks, starts = append(ticks, r.info.Tick.Sub(t0)), append(starts, r.start.Sub(t0))
					}
					if !slices.Equal(ticks, tc.ticks) || !slices.Equal(starts, tc.starts) {
						t.Errorf("%s: ran ticks %v at %v, want %v at %v", job, ticks, starts, tc.ticks, tc.starts)
					}
					checkSerial(t, runs)
					var skipped []time.Duration
					for _, tick := range skippedTicks(rec, job, "overlap") {
						skipped = append(skipped, tick.Sub(t0))
					}
					if !slices.Equal(skipped, tc.skipped) { // replaced by the next, or at the stop
						t.Errorf("%s: ticks %v skipped as overlap, want %v", job, skipped, tc.skipped)
					}
				}
			})
		})
	}
}

// TestOverlapQueueOneGrace: under OverlapQueueOne, a tick whose previous
// run is still going at the end of its misfire grace is skipped as
// overlap, after waiting; no run starts past its tick's grace.
func TestOverlapQueueOneGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		rec := &recorder{}
		var log spans
		s := newScheduler(t, locker(), scheduler.WithObserver(rec.Observe))
		mustAdd(t, s, "job", "* * * * *", log.job(95*time.Second, false),
			scheduler.WithOverlap(scheduler.OverlapQueueOne), scheduler.WithMisfireGrace(20*time.Second))
		stop := start(t, s)
		sleepUntil(t0.Add(5*time.Minute + 50*time.Second))
		stop()

		runs := log.of("job")
		for _, r := range runs {
			if !r.start.Equal(r.info.Tick) {
				t.Errorf("tick %s started at %s, not at its tick", hm(r.info.Tick), hm(r.start))
			}
		}
		if len(runs) != 3 {
			t.Errorf("%d runs, want those of the ticks at 1, 3 and 5 min", len(runs))
		}
		var waited int
		for _, ev := range rec.skips("overlap") {
			if ev.Attempts > 1 {
				waited++
			}
		}
		if waited != 2 {
			t.Errorf("%d overlap skips after waiting (several lock attempts), want 2 (ticks at 2 and 4 min): %+v",
				waited, rec.skips("overlap"))
		}
	})
}

// TestOverlapReplace: under OverlapReplace, each tick cancels the run of
// the previous one, with a cause matching ErrReplaced, and starts at the
// tick once that run has ended; with WithLockAhead, at the tick, not
// ahead. A job that ignores the cancellation keeps its lease: the tick
// waits for its end, as under OverlapQueueOne.
func TestOverlapReplace(t *testing.T) {
	for _, tc := range []struct {
		name       string
		opts       []scheduler.Option
		job        time.Duration // 0: until its context is done
		ignore     bool
		wantStarts []time.Duration // in seconds after the start
	}{
		{"at the tick", nil, 0, false, []time.Duration{60, 120, 180, 240, 300}},
		{"lock-ahead", []scheduler.Option{scheduler.WithLockAhead(10 * time.Second)}, 0, false, []time.Duration{60, 120, 180, 240, 300}},
		{"ignoring the cancellation", nil, 95 * time.Second, true, []time.Duration{60, 155, 250}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				rec := &recorder{}
				var log spans
				s := newScheduler(t, locker(), append(tc.opts, scheduler.WithObserver(rec.Observe))...)
				mustAdd(t, s, "job", "* * * * *", log.job(tc.job, tc.ignore), scheduler.WithOverlap(scheduler.OverlapReplace))
				stop := start(t, s)
				sleepUntil(t0.Add(5*time.Minute + 30*time.Second))
				stop()

				runs := log.of("job")
				var starts []time.Duration
				for _, r := range runs {
					starts = append(starts, r.start.Sub(t0))
				}
				want := make([]time.Duration, len(tc.wantStarts))
				for i, sec := range tc.wantStarts {
					want[i] = sec * time.Second
				}
				if !slices.Equal(starts, want) {
					t.Fatalf("runs started at %v, want %v", starts, want)
				}
				checkSerial(t, runs)
				for _, r := range runs[:len(runs)-1] {
					by := r.info.Tick.Add(time.Minute) // the next tick replaces it
					if !errors.Is(r.cause, scheduler.ErrReplaced) || !strings.Contains(r.cause.Error(), by.UTC().Format(time.RFC3339)) {
						t.Errorf("run of tick %s ended with cause %v, want ErrReplaced by tick %s", hm(r.info.Tick), r.cause, hm(by))
					}
					if !tc.ignore && !r.end.Equal(by) {
						t.Errorf("run of tick %s ended at %s, not at the next tick", hm(r.info.Tick), hm(r.end))
					}
				}
				if tc.ignore {
					return
				}
				for _, ev := range rec.finished()[:len(runs)-1] {
					if ev.Result != "canceled" || !errors.Is(ev.Err, scheduler.ErrReplaced) {
						t.Errorf("run_finished of tick %s: %s, %v; want canceled, ErrReplaced", hm(ev.Tick), ev.Result, ev.Err)
					}
				}
				if n := len(rec.of("skipped")); n != 0 {
					t.Errorf("%d ticks skipped: %+v", n, rec.of("skipped"))
				}
			})
		})
	}
}

// TestOverlapReplaceAcrossReplicas: three replicas under OverlapReplace,
// with a job that runs until cancelled: whichever replica runs it cancels
// it at the next tick (ErrReplaced), and each tick runs once, after the
// previous run ended, with increasing fences. Also with skewed clocks.
func TestOverlapReplaceAcrossReplicas(t *testing.T) {
	for name, offsets := range map[string][]time.Duration{
		"same clocks":   {0, 0, 0},
		"skewed clocks": {0, 150 * time.Millisecond, 400 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				t0 := time.Now()
				l := locker()
				var log spans
				var stops []func()
				for i, off := range offsets {
					s := newScheduler(t, l, scheduler.WithClock(offsetClock(off)), scheduler.WithInstanceID(fmt.Sprintf("replica-%d", i)))
					mustAdd(t, s, "job", "* * * * *", log.job(0, false), scheduler.WithOverlap(scheduler.OverlapReplace))
					stops = append(stops, start(t, s))
				}
				end := t0.Add(6 * time.Minute)
				sleepUntil(end.Add(30 * time.Second))
				stopAll(stops...)

				runs := log.of("job")
				var ticks []time.Time
				for _, r := range runs {
					ticks = append(ticks, r.info.Tick)
				}
				if want := expectTicks(t0, end, time.Minute); !slices.EqualFunc(ticks, want, time.Time.Equal) {
					t.Fatalf("ran ticks %v, want each of %v once", ticks, want)
				}
				checkSerial(t, runs)
				for _, r := range runs[:len(runs)-1] {
					if !errors.Is(r.cause, scheduler.ErrReplaced) {
						t.Errorf("run of tick %s on %s ended with cause %v, want ErrReplaced", hm(r.info.Tick), r.info.Instance, r.cause)
					}
				}
			})
		})
	}
}

// TestOverlapQueueOneAcrossReplicas: the replica running a 95 s job stops
// handling ticks (a graceful Shutdown, which waits for the run); the other
// replica's waiting tick runs there soon after that run's lease is
// released, without that replica's help.
func TestOverlapQueueOneAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := locker()
		var log spans
		started := make(chan string, 10)
		stops := map[string]func(){}
		job := log.job(95*time.Second, false)
		for _, id := range []string{"a", "b"} {
			s := newScheduler(t, l, scheduler.WithInstanceID(id))
			mustAdd(t, s, "job", "* * * * *", func(ctx context.Context, info scheduler.RunInfo) error {
				started <- info.Instance
				return job(ctx, info)
			}, scheduler.WithOverlap(scheduler.OverlapQueueOne))
			stops[id] = start(t, s)
		}
		holder := <-started // the run of the first tick
		other := map[string]string{"a": "b", "b": "a"}[holder]
		sleepUntil(t0.Add(90 * time.Second))
		stopped := make(chan struct{})
		go func() {
			stops[holder]()
			close(stopped)
		}()
		sleepUntil(t0.Add(3*time.Minute + 30*time.Second))
		stops[other]()
		<-stopped

		runs := log.of("job")
		if len(runs) < 2 {
			t.Fatalf("%d runs, want the first tick's and the second's", len(runs))
		}
		first, second := runs[0], runs[1]
		released := first.end
		if g := l.Grants(); len(g) > 0 && !g[0].Released.IsZero() {
			released = g[0].Released
		}
		if second.info.Instance != other || !second.info.Tick.Equal(t0.Add(2*time.Minute)) ||
			second.start.Before(released) || second.start.After(released.Add(1100*time.Millisecond)) {
			t.Errorf("second run: tick %s on %s at %s; want tick 02:00 on %s, within 1.1 s after the first run's release at %s",
				hm(second.info.Tick), second.info.Instance, hm(second.start), other, hm(released))
		}
		checkSerial(t, runs)
	})
}

// TestOverlapStuckHolder: a replica stuck mid-run (its process paused: its
// lease is not kept alive, and it does not see the next tick) holds the
// job's lock for an earlier tick. Under OverlapQueueOne and OverlapReplace
// the tick runs elsewhere once that lease has expired, if that is within
// its grace, and is skipped as overlap otherwise; it never starts before
// the expiry.
func TestOverlapStuckHolder(t *testing.T) {
	for _, policy := range []scheduler.OverlapPolicy{scheduler.OverlapQueueOne, scheduler.OverlapReplace} {
		for _, grace := range []time.Duration{time.Minute, 20 * time.Second} {
			t.Run(fmt.Sprintf("%s/grace %v", policy, grace), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					t0 := time.Now()
					l := locker()
					rec := &recorder{}
					var log spans
					s := newScheduler(t, l, scheduler.WithObserver(rec.Observe))
					mustAdd(t, s, "job", "* * * * *", log.job(time.Second, false),
						scheduler.WithOverlap(policy), scheduler.WithMisfireGrace(grace))
					stop := start(t, s)
					// The stuck replica won the first tick at 00:55 with a 90 s TTL
					// and was paused: its lease expires at 02:25.
					sleepUntil(t0.Add(55 * time.Second))
					stuck, err := l.Acquire(context.Background(), scheduler.LockRequest{
						Job: "job", Tick: t0.Add(time.Minute), TTL: 90 * time.Second, Owner: "stuck"})
					if err != nil {
						t.Fatal(err)
					}
					expiry := t0.Add(2*time.Minute + 25*time.Second)
					sleepUntil(t0.Add(3*time.Minute + 30*time.Second))
					stop()

					runs := log.of("job")
					var ticks []string
					for _, r := range runs {
						ticks = append(ticks, hm(r.info.Tick))
						if r.start.Before(expiry) || r.info.Fence <= stuck.Fence() {
							t.Errorf("tick %s ran at %s with fence %d, before the stuck lease (fence %d) expired at %s",
								hm(r.info.Tick), hm(r.start), r.info.Fence, stuck.Fence(), hm(expiry))
						}
					}
					if grace == time.Minute {
						if len(runs) != 2 || !runs[0].info.Tick.Equal(t0.Add(2*time.Minute)) ||
							runs[0].start.After(expiry.Add(1100*time.Millisecond)) {
							t.Errorf("ran ticks %v (first at %s), want 02:00 within 1.1 s of the expiry at %s, then 03:00",
								ticks, hm(runs[0].start), hm(expiry))
						}
						return
					}
					if len(runs) != 1 || !runs[0].info.Tick.Equal(t0.Add(3*time.Minute)) {
						t.Errorf("ran ticks %v, want 03:00 only", ticks)
					}
					if skipped := skippedTicks(rec, "job", "overlap"); len(skipped) != 1 || !skipped[0].Equal(t0.Add(2*time.Minute)) {
						t.Errorf("overlap skips %v, want the tick at 02:00", skipped)
					}
				})
			})
		}
	}
}

// TestWithOverlapBadInput: a policy other than the three is refused, with
// an error naming the job and the option.
func TestWithOverlapBadInput(t *testing.T) {
	s := newScheduler(t, locker())
	for _, p := range []scheduler.OverlapPolicy{"", "forbid", "Replace"} {
		err := s.Add("nightly", "@hourly", noop, scheduler.WithOverlap(p))
		if !errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), `"nightly"`) ||
			!strings.Contains(err.Error(), "WithOverlap") {
			t.Errorf("WithOverlap(%q): %v", p, err)
		}
	}
	if err := s.Add("nightly", "@hourly", noop, scheduler.WithOverlap(scheduler.OverlapReplace)); err != nil {
		t.Errorf("WithOverlap(OverlapReplace): %v", err)
	}
}
