package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/scheduler"
)

// blockingJob returns a job that signals started when it runs, and the
// channel on which it sends context.Cause of its context when it returns
// (buffered for a few runs).
// With ignore, it returns only when release is closed, whatever its context;
// otherwise when its context is done or release is closed.
func blockingJob(started chan<- struct{}, release <-chan struct{}, ignore bool) (scheduler.JobFunc, <-chan error) {
	causes := make(chan error, 16)
	return scheduler.JobFunc(func(ctx context.Context, _ scheduler.RunInfo) error {
		defer func() { causes <- context.Cause(ctx) }()
		started <- struct{}{}
		if ignore {
			<-release
			return nil
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}), causes
}

// runAndWaitForJob starts s in the background with ctx, and waits until
// its job has started; it returns Run's error channel.
func runAndWaitForJob(ctx context.Context, s *scheduler.Scheduler, started <-chan struct{}) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	<-started
	return errc
}

func assertReleased(t *testing.T, l *schedulertest.Locker, job string) {
	t.Helper()
	if g, held := l.Held(job); held {
		t.Errorf("lease still held: %+v", g)
	}
	grants := l.Grants()
	if len(grants) == 0 || grants[len(grants)-1].Released.IsZero() {
		t.Errorf("grants %+v, want the last one released", grants)
	}
}

func TestShutdown(t *testing.T) {
	t.Run("waits for running jobs", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := locker()
			obs := &recorder{}
			started, release := make(chan struct{}, 1), make(chan struct{})
			job, causes := blockingJob(started, release, false)
			s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
			mustAdd(t, s, "job", "@every 1m", job)
			errc := runAndWaitForJob(context.Background(), s, started)

			go func() {
				time.Sleep(3 * time.Second)
				close(release)
			}()
			t0 := time.Now()
			if err := s.Shutdown(context.Background()); err != nil {
				t.Errorf("Shutdown: %v", err)
			}
			if d := time.Since(t0); d != 3*time.Second {
				t.Errorf("Shutdown returned after %v, want 3s, when the job returned", d)
			}
			if err := <-causes; err != nil {
				t.Errorf("job's context cancelled: %v", err)
			}
			if err := <-errc; !errors.Is(err, scheduler.ErrClosed) {
				t.Errorf("Run = %v, want ErrClosed", err)
			}
			if fin := obs.finished(); len(fin) != 1 || fin[0].Result != "success" {
				t.Errorf("finished %+v, want success", fin)
			}
			assertReleased(t, l, "job")
		})
	})
	t.Run("cancels cooperative jobs when ctx is done", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := locker()
			obs := &recorder{}
			started := make(chan struct{}, 1)
			job, causes := blockingJob(started, nil, false)
			s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
			mustAdd(t, s, "job", "@every 1m", job)
			errc := runAndWaitForJob(context.Background(), s, started)

			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if err := s.Shutdown(ctx); err != nil {
				t.Errorf("Shutdown = %v, want nil: the job returned when cancelled", err)
			}
			if err := <-causes; !errors.Is(err, scheduler.ErrShutdown) {
				t.Errorf("job's context cause = %v, want ErrShutdown", err)
			}
			if err := <-errc; !errors.Is(err, scheduler.ErrClosed) {
				t.Errorf("Run = %v, want ErrClosed", err)
			}
			fin := obs.finished()
			if len(fin) != 1 || fin[0].Result != "canceled" || !errors.Is(fin[0].Err, scheduler.ErrShutdown) {
				t.Errorf("finished %+v, want canceled with ErrShutdown", fin)
			}
			assertReleased(t, l, "job")
		})
	})
	t.Run("abandons jobs that ignore cancellation", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := locker()
			obs := &recorder{}
			started, release := make(chan struct{}, 1), make(chan struct{})
			job, causes := blockingJob(started, release, true)
			s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
			mustAdd(t, s, "job", "@every 1m", job)
			errc := runAndWaitForJob(context.Background(), s, started)

			t0 := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := s.Shutdown(ctx)
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "did not stop in time") {
				t.Errorf("Shutdown = %v, want jobs that did not stop in time, and DeadlineExceeded", err)
			}
			if d := time.Since(t0); d != 6*time.Second {
				t.Errorf("Shutdown returned after %v, want 1s + 5s", d)
			}
			if err := <-errc; !errors.Is(err, scheduler.ErrClosed) {
				t.Errorf("Run = %v, want ErrClosed", err)
			}
			// The lease is released although the job still runs.
			assertReleased(t, l, "job")
			fin := obs.finished()
			if len(fin) != 1 || fin[0].Result != "abandoned" || !strings.Contains(fmt.Sprint(fin[0].Err), "did not stop in time") {
				t.Errorf("finished %+v, want abandoned: did not stop in time", fin)
			}
			close(release)
			if err := <-causes; !errors.Is(err, scheduler.ErrShutdown) {
				t.Errorf("job's context cause = %v, want ErrShutdown", err)
			}
		})
	})
	t.Run("before Run", func(t *testing.T) {
		s := newScheduler(t, locker())
		mustAdd(t, s, "job", "@hourly", noop)
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := s.Run(context.Background()); !errors.Is(err, scheduler.ErrClosed) {
			t.Errorf("Run after Shutdown = %v, want ErrClosed", err)
		}
		if err := s.Add("other", "@hourly", noop); !errors.Is(err, scheduler.ErrClosed) {
			t.Errorf("Add after Shutdown = %v, want ErrClosed", err)
		}
		if _, err := s.Trigger(context.Background(), "job"); !errors.Is(err, scheduler.ErrClosed) {
			t.Errorf("Trigger after Shutdown = %v, want ErrClosed", err)
		}
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("second Shutdown: %v", err)
		}
	})
	t.Run("abandons pending lock attempts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			l := locker()
			obs := &recorder{}
			s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
			mustAdd(t, s, "job", "@every 1m", noop)
			l.FailNext(1 << 30)
			stop := start(t, s)
			time.Sleep(70 * time.Second)
			t0 := time.Now()
			stop()
			if d := time.Since(t0); d != 0 {
				t.Errorf("Shutdown took %v, want no wait", d)
			}
			if n := len(obs.of("lock_retry")); n == 0 {
				t.Error("no lock retries")
			}
			if skips := obs.of("skipped"); len(skips) != 0 {
				t.Errorf("skips %+v: an attempt abandoned by Shutdown is not a skip", skips)
			}
		})
	})
}

// TestRunContextIsAHardStop cancels Run's context during a run.
func TestRunContextIsAHardStop(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		name := map[bool]string{false: "cooperative job", true: "job ignoring cancellation"}[ignore]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := locker()
				obs := &recorder{}
				started, release := make(chan struct{}, 1), make(chan struct{})
				job, causes := blockingJob(started, release, ignore)
				s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
				mustAdd(t, s, "job", "@every 1m", job)
				errBoom := errors.New("boom")
				ctx, cancel := context.WithCancelCause(context.Background())
				errc := runAndWaitForJob(ctx, s, started)

				t0 := time.Now()
				cancel(errBoom)
				if err := <-errc; !errors.Is(err, context.Canceled) {
					t.Errorf("Run = %v, want context.Canceled", err)
				}
				wantWait := time.Duration(0)
				if ignore {
					wantWait = 5 * time.Second
				}
				if d := time.Since(t0); d != wantWait {
					t.Errorf("Run returned %v after the cancellation, want %v", d, wantWait)
				}
				assertReleased(t, l, "job")
				fin := obs.finished()
				want := map[bool]string{false: "canceled", true: "abandoned"}[ignore]
				if len(fin) != 1 || fin[0].Result != want || !errors.Is(fin[0].Err, errBoom) {
					t.Errorf("finished %+v, want %v with the context's cause", fin, want)
				}
				if err := s.Run(context.Background()); !errors.Is(err, scheduler.ErrClosed) {
					t.Errorf("second Run = %v, want ErrClosed", err)
				}
				if err := s.Shutdown(context.Background()); err != nil {
					t.Errorf("Shutdown after Run returned: %v", err)
				}
				close(release)
				if err := <-causes; !errors.Is(err, errBoom) {
					t.Errorf("job's context cause = %v, want the context's cause", err)
				}
			})
		})
	}
}

func TestRunTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newScheduler(t, locker())
		stop := start(t, s)
		synctest.Wait()
		if err := s.Run(context.Background()); err == nil || errors.Is(err, scheduler.ErrClosed) {
			t.Errorf("concurrent Run = %v, want an error other than ErrClosed", err)
		}
		stop()
	})
}
