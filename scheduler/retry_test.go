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

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// flaky is a job that fails its first fails tries of each run, or panics
// on them, and records every try it sees.
type flaky struct {
	mu    sync.Mutex
	fails int
	panic bool
	tries []scheduler.RunInfo
	at    []time.Time
}

func (f *flaky) job(ctx context.Context, info scheduler.RunInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fromCtx, _ := scheduler.RunInfoFromContext(ctx)
	if fromCtx != info {
		return fmt.Errorf("RunInfoFromContext %+v, want the job's %+v", fromCtx, info)
	}
	f.tries = append(f.tries, info)
	f.at = append(f.at, time.Now())
	if info.Try <= f.fails {
		if f.panic {
			panic("try failed")
		}
		return fmt.Errorf("try %d failed", info.Try)
	}
	return nil
}

func (f *flaky) seen() ([]scheduler.RunInfo, []time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.tries), slices.Clone(f.at)
}

// TestRetry: with WithRetry, a failed run is tried again under the same
// lease, fence and run id, after the backoff and twice as long after each
// failure, until it succeeds, its tries are spent or the misfire grace
// ends; a panic is not tried again. Each failure tried again is reported.
func TestRetry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		fails    int
		panic    bool
		opts     []scheduler.JobOption
		tries    int
		result   string
		retryAts []time.Duration // each try's start after the tick
	}{
		{"succeeds on the third try", 2, false, []scheduler.JobOption{scheduler.WithRetry(3, time.Second)},
			3, "success", []time.Duration{0, time.Second, 3 * time.Second}},
		{"tries spent", 5, false, []scheduler.JobOption{scheduler.WithRetry(3, time.Second)},
			3, "failure", []time.Duration{0, time.Second, 3 * time.Second}},
		{"misfire grace ends", 5, false, []scheduler.JobOption{scheduler.WithRetry(10, time.Second), scheduler.WithMisfireGrace(5 * time.Second)},
			3, "failure", []time.Duration{0, time.Second, 3 * time.Second}},
		{"no retry after a panic", 1, true, []scheduler.JobOption{scheduler.WithRetry(3, time.Second)},
			1, "panic", []time.Duration{0}},
		{"no retry by default", 1, false, nil,
			1, "failure", []time.Duration{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{}
				s := newScheduler(t, locker(), scheduler.WithObserver(rec.Observe))
				f := &flaky{fails: tc.fails, panic: tc.panic}
				mustAdd(t, s, "job", "* * * * *", f.job, tc.opts...)
				stop := start(t, s)
				tick := time.Now().Truncate(time.Minute).Add(time.Minute)
				sleepUntil(tick.Add(50 * time.Second))
				stop()

				tries, at := f.seen()
				if len(tries) != tc.tries {
					t.Fatalf("%d tries, want %d: %+v", len(tries), tc.tries, tries)
				}
				for i, info := range tries {
					if info.Try != i+1 || info.Fence != tries[0].Fence || info.RunID != tries[0].RunID || !info.Tick.Equal(tick) {
						t.Errorf("try %d: %+v, want try %d of the first's run and fence", i, info, i+1)
					}
					if d := at[i].Sub(tick); d != tc.retryAts[i] {
						t.Errorf("try %d started %v after the tick, want %v", i+1, d, tc.retryAts[i])
					}
				}
				fin := rec.finished()
				if len(fin) != 1 || fin[0].Result != tc.result || fin[0].Try != tc.tries {
					t.Fatalf("run_finished %+v, want one, %s after %d tries", fin, tc.result, tc.tries)
				}
				retries := rec.of("run_retry")
				if len(retries) != tc.tries-1 {
					t.Fatalf("%d run_retry events, want %d", len(retries), tc.tries-1)
				}
				for i, ev := range retries {
					if ev.Try != i+1 || ev.Err == nil || ev.RunID != tries[0].RunID {
						t.Errorf("run_retry %d: %+v", i, ev)
					}
				}
				if n := len(rec.of("run_started")); n != 1 {
					t.Errorf("%d run_started events, want 1", n)
				}
			})
		})
	}
}

// TestRetryStopsWithTheLease: a run whose context ended (here its run
// timeout) is not tried again.
func TestRetryStopsWithTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(t, locker())
		var tries int
		var mu sync.Mutex
		mustAdd(t, s, "job", "* * * * *", func(ctx context.Context, _ scheduler.RunInfo) error {
			mu.Lock()
			tries++
			mu.Unlock()
			<-ctx.Done()
			return context.Cause(ctx)
		}, scheduler.WithRetry(5, time.Second), scheduler.WithRunTimeout(2*time.Second))
		stop := start(t, s)
		time.Sleep(90 * time.Second)
		stop()
		mu.Lock()
		defer mu.Unlock()
		if tries != 1 {
			t.Errorf("%d tries of a run that timed out, want 1", tries)
		}
	})
}

func TestRetryBadInput(t *testing.T) {
	s := newScheduler(t, locker())
	for _, opt := range []scheduler.JobOption{scheduler.WithRetry(0, time.Second), scheduler.WithRetry(101, time.Second),
		scheduler.WithRetry(2, -time.Second)} {
		if err := s.Add("job", "@hourly", noop, opt); !errors.Is(err, mutex.ErrInvalidOption) {
			t.Errorf("Add with a bad WithRetry: %v", err)
		}
	}
}

// TestRetryStopsAtShutdown: a graceful Shutdown ends a run's retries: the
// run waiting out its backoff ends at once with its last failure.
func TestRetryStopsAtShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		s := newScheduler(t, locker(), scheduler.WithObserver(rec.Observe))
		failed := make(chan struct{}, 10)
		mustAdd(t, s, "job", "* * * * *", func(context.Context, scheduler.RunInfo) error {
			failed <- struct{}{}
			return errors.New("down")
		}, scheduler.WithRetry(5, 10*time.Second))
		go func() { _ = s.Run(context.Background()) }()
		<-failed // the first try failed; the run waits 10 s for the next
		synctest.Wait()
		start := time.Now()
		if err := s.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d >= 10*time.Second {
			t.Errorf("Shutdown waited %v, the run's backoff", d)
		}
		fin := rec.finished()
		if len(fin) != 1 || fin[0].Try != 1 || fin[0].Result != "failure" {
			t.Errorf("run_finished %+v, want one failure after one try", fin)
		}
	})
}
