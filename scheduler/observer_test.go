package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestObserversCompose: every observer given receives every event, so an
// audit observer added next to the metrics one does not silence it.
func TestObserversCompose(t *testing.T) {
	var first, second []scheduler.Kind
	s := newScheduler(t, schedulertest.NewLocker(),
		scheduler.WithObserver(func(e scheduler.Event) { first = append(first, e.Kind) }),
		scheduler.WithObserver(func(e scheduler.Event) { second = append(second, e.Kind) }))
	mustAdd(t, s, "job", "@hourly", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil }))
	if len(first) != 1 || len(second) != 1 || first[0] != "job_added" || second[0] != "job_added" {
		t.Fatalf("observers saw %v and %v, want one EventJobAdded each", first, second)
	}
}

// TestTriggerUnknownBeforeRun: Trigger of a name no job has fails at once,
// before Run too, instead of waiting for Run or its context.
func TestTriggerUnknownBeforeRun(t *testing.T) {
	s := newScheduler(t, schedulertest.NewLocker())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if _, err := s.Trigger(ctx, "nope"); !errors.Is(err, scheduler.ErrUnknownJob) || time.Since(start) > 10*time.Second {
		t.Fatalf("Trigger(nope) before Run = %v after %v, want ErrUnknownJob at once", err, time.Since(start))
	}
}

// TestJobObserver: a job's observer (WithJobObserver) receives each event
// of its job once, on the replica where it happened, right after the
// scheduler's observers, and none of other jobs: over two replicas, each
// tick is one run_started and one run_finished (success, failure, then
// panic) on the replica that ran it, and one skip (held or already_run) on
// the other.
func TestJobObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := locker()
		var stops []func()
		var all, mine [2]recorder
		for i := range 2 {
			s := newScheduler(t, l, scheduler.WithObserver(all[i].Observe))
			mustAdd(t, s, "job", "* * * * *", func(_ context.Context, info scheduler.RunInfo) error {
				switch info.Tick.Minute() {
				case 2:
					return errors.New("failed")
				case 3:
					panic("boom")
				}
				return nil
			}, scheduler.WithJobObserver(mine[i].Observe))
			mustAdd(t, s, "other", "* * * * *", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil }))
			stops = append(stops, start(t, s))
		}
		sleepUntil(time.Now().Add(3*time.Minute + 30*time.Second))
		stopAll(stops...)

		var results, skips []string
		for i := range 2 {
			var want []scheduler.Event
			for _, ev := range all[i].of("job_added", "run_started", "run_finished", "skipped", "lock_retry", "run_retry", "job_removed") {
				if ev.Job == "job" {
					want = append(want, ev)
				}
			}
			got := mine[i].of("job_added", "run_started", "run_finished", "skipped", "lock_retry", "run_retry", "job_removed")
			if !slices.EqualFunc(got, want, sameEvent) {
				t.Errorf("replica %d: the job's observer saw %+v, want its job's events %+v", i, got, want)
			}
			for _, ev := range got {
				if ev.Kind == "run_finished" {
					results = append(results, fmt.Sprintf("%d:%s", ev.Tick.Minute(), ev.Result))
				}
				if ev.Kind == "skipped" {
					skips = append(skips, fmt.Sprintf("%d:%s", ev.Tick.Minute(), ev.Skip))
				}
			}
			if n, m := len(mine[i].of("run_started")), len(mine[i].of("run_finished")); n != m {
				t.Errorf("replica %d: %d runs started, %d finished", i, n, m)
			}
		}
		slices.Sort(results)
		if want := []string{"1:success", "2:failure", "3:panic"}; !slices.Equal(results, want) {
			t.Errorf("runs finished %v, want %v, once each", results, want)
		}
		if len(skips) != 3 {
			t.Errorf("skips %v, want one per tick, on the replica that did not run it", skips)
		}
	})
}

// sameEvent reports whether a and b are the same event (Err compared by
// identity, a *PanicError's stack included).
func sameEvent(a, b scheduler.Event) bool {
	return a.Kind == b.Kind && a.Job == b.Job && a.Tick.Equal(b.Tick) && a.RunID == b.RunID &&
		a.Result == b.Result && a.Skip == b.Skip && a.Err == b.Err && a.Instance == b.Instance
}

// TestJobObserverPanics: a job's observer that panics at every event does
// not stop the scheduler: the panic is logged with the event, the job runs
// at every tick, its runs are reported to the scheduler's observers as
// usual, and the panicking observer is called again for the next events.
func TestJobObserverPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged lockedBuffer
		rec := &recorder{}
		var calls atomic.Int32
		s := newScheduler(t, locker(), scheduler.WithObserver(rec.Observe),
			scheduler.WithLogger(slog.New(slog.NewTextHandler(&logged, nil))))
		var runs atomic.Int32
		mustAdd(t, s, "job", "* * * * *", func(context.Context, scheduler.RunInfo) error {
			runs.Add(1)
			return nil
		}, scheduler.WithJobObserver(func(ev scheduler.Event) {
			calls.Add(1)
			panic("observer: " + ev.Kind)
		}))
		stop := start(t, s)
		sleepUntil(time.Now().Add(3*time.Minute + 30*time.Second))
		stop()

		if runs.Load() != 3 || len(rec.finished()) != 3 {
			t.Errorf("%d runs, %d reported finished, want 3 and 3", runs.Load(), len(rec.finished()))
		}
		for _, ev := range rec.finished() {
			if ev.Result != "success" {
				t.Errorf("run of %s: %s (%v), want success", ev.Tick, ev.Result, ev.Err)
			}
		}
		if calls.Load() != 7 { // job_added, then each run's start and end
			t.Errorf("observer called %d times, want 7", calls.Load())
		}
		out := logged.String()
		for _, want := range []string{"job observer panicked", "event=run_started", "event=run_finished", "observer: run_finished"} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %q:\n%s", want, out)
			}
		}
	})
}

// TestJobObserverNil: a nil observer is refused at Add, naming the option.
func TestJobObserverNil(t *testing.T) {
	s := newScheduler(t, locker())
	err := s.Add("job", "@hourly", func(context.Context, scheduler.RunInfo) error { return nil }, scheduler.WithJobObserver(nil))
	if !errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), "WithJobObserver") {
		t.Errorf("Add with WithJobObserver(nil) = %v, want mutex.ErrInvalidOption naming the option", err)
	}
}
