package scheduler_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/scheduler"
)

// recorder is an Observer that keeps every event.
type recorder struct {
	mu     sync.Mutex
	events []scheduler.Event
}

func (r *recorder) Observe(ev scheduler.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

// of returns the events of the given kinds.
func (r *recorder) of(kinds ...scheduler.Kind) []scheduler.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []scheduler.Event
	for _, ev := range r.events {
		if slices.Contains(kinds, ev.Kind) {
			out = append(out, ev)
		}
	}
	return out
}

// skips returns the EventSkipped events with the given reason.
func (r *recorder) skips(reason string) []scheduler.Event {
	var out []scheduler.Event
	for _, ev := range r.of("skipped") {
		if ev.Skip == reason {
			out = append(out, ev)
		}
	}
	return out
}

// finished returns the EventRunFinished events.
func (r *recorder) finished() []scheduler.Event { return r.of("run_finished") }

// runLog records the runs of jobs.
type runLog struct {
	mu   sync.Mutex
	runs []scheduler.RunInfo
}

func (l *runLog) add(info scheduler.RunInfo) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.runs = append(l.runs, info)
}

func (l *runLog) all() []scheduler.RunInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.runs)
}

// ticks returns the ticks run, in the order the runs started.
func (l *runLog) ticks() []time.Time {
	var out []time.Time
	for _, r := range l.all() {
		out = append(out, r.Tick)
	}
	return out
}

// job returns a job that records its run and then takes d.
func (l *runLog) job(d time.Duration) scheduler.JobFunc {
	return scheduler.JobFunc(func(ctx context.Context, info scheduler.RunInfo) error {
		l.add(info)
		if d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}
		return nil
	})
}

// newScheduler calls scheduler.New and fails the test on error.
func newScheduler(t *testing.T, l scheduler.Locker, opts ...scheduler.Option) *scheduler.Scheduler {
	t.Helper()
	s, err := scheduler.New(l, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// mustAdd calls s.Add and fails the test on error.
func mustAdd(t *testing.T, s *scheduler.Scheduler, name, spec string, job scheduler.JobFunc, opts ...scheduler.JobOption) {
	t.Helper()
	if err := s.Add(name, spec, job, opts...); err != nil {
		t.Fatalf("Add(%q, %q): %v", name, spec, err)
	}
}

// start runs s in the background; the returned function shuts it down
// (with a context that ends after grace) and checks that Run returned
// ErrClosed and Shutdown returned nil.
func start(t *testing.T, s *scheduler.Scheduler) (stop func()) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- s.Run(context.Background()) }()
	return func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-errc; !errors.Is(err, scheduler.ErrClosed) {
			t.Errorf("Run returned %v, want ErrClosed", err)
		}
	}
}

// stopAll calls the stop functions concurrently, so that the replicas stop
// handling ticks at the same time.
func stopAll(stops ...func()) {
	var wg sync.WaitGroup
	for _, stop := range stops {
		wg.Go(stop)
	}
	wg.Wait()
}

// sleepUntil sleeps until the (fake) time t.
func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// offsetClock returns a clock that is off by d.
func offsetClock(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

// expectTicks returns the ticks every period in (from, to].
func expectTicks(from, to time.Time, period time.Duration) []time.Time {
	var out []time.Time
	for t := from.Truncate(period).Add(period); !t.After(to); t = t.Add(period) {
		out = append(out, t)
	}
	return out
}

// locker returns a new in-memory locker.
func locker() *schedulertest.Locker { return schedulertest.NewLocker() }
