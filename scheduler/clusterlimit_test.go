package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestClusterLimit: five jobs of 2 s due together, each registered on
// three replicas (a Redlock each over three real redis-servers) with a
// cluster limit of two permits, all run once, never more than two at once
// in the fleet, and two at once at some point.
func TestClusterLimit(t *testing.T) {
	c := redistest.Start(t, 3)
	type span struct{ start, end time.Time }
	var mu sync.Mutex
	runs := map[string][]span{}
	all := make(chan struct{})
	var stops []func()
	for i := range 3 {
		s, err := scheduler.New(scheduler.NewRedlockLocker(redlockOn(t, c)), scheduler.WithSeconds(), scheduler.WithInstanceID(fmt.Sprintf("replica-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		for j := range 5 {
			name := fmt.Sprintf("report-%d", j)
			mustAdd(t, s, name, "*/10 * * * * *", func(ctx context.Context, _ scheduler.RunInfo) error {
				start := time.Now()
				select {
				case <-time.After(2 * time.Second):
				case <-ctx.Done():
				}
				mu.Lock()
				defer mu.Unlock()
				runs[name] = append(runs[name], span{start, time.Now()})
				if len(runs) == 5 {
					select {
					case <-all:
					default:
						close(all)
					}
				}
				return nil
			}, scheduler.WithClusterLimit("reports", 2))
		}
		stops = append(stops, start(t, s))
	}
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		t.Error("not every job ran within 30 s")
	}
	stopAll(stops...)

	mu.Lock()
	defer mu.Unlock()
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for name, spans := range runs {
		if len(spans) != 1 {
			t.Errorf("%s ran %d times, want once", name, len(spans))
		}
		for _, sp := range spans {
			edges = append(edges, edge{sp.start, 1}, edge{sp.end, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta // an end before a start at the same instant
	})
	most, now := 0, 0
	for _, e := range edges {
		now += e.delta
		most = max(most, now)
	}
	if most > 2 {
		t.Errorf("%d runs at once in the fleet, want at most 2", most)
	}
	if most < 2 {
		t.Errorf("at most %d run at once: the limit was never reached, so the test proves nothing", most)
	}
}

// TestClusterLimitSkips: a tick that gets no permit within its misfire
// grace, both held elsewhere, is skipped with reason cluster_limit, and
// does not run.
func TestClusterLimitSkips(t *testing.T) {
	c := redistest.Start(t, 3)
	ctx := context.Background()
	var held []*mutex.Lock
	for range 2 {
		l, err := redlockOn(t, c).TryLock(ctx, "reports", 30*time.Second, mutex.Permits(2))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	defer func() {
		for _, l := range held {
			l.Release(ctx)
		}
	}()
	locks := redlockOn(t, c)
	skipped := make(chan scheduler.Event, 10)
	s, err := scheduler.New(scheduler.NewRedlockLocker(locks), scheduler.WithSeconds(),
		scheduler.WithObserver(func(ev scheduler.Event) {
			if ev.Kind == "skipped" {
				skipped <- ev
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 10)
	mustAdd(t, s, "report", "*/2 * * * * *", func(context.Context, scheduler.RunInfo) error {
		ran <- struct{}{}
		return nil
	}, scheduler.WithClusterLimit("reports", 2), scheduler.WithMisfireGrace(time.Second))
	stop := start(t, s)
	defer stop()
	select {
	case ev := <-skipped:
		if ev.Skip != "cluster_limit" {
			t.Errorf("skipped %q (%v), want cluster_limit", ev.Skip, ev.Err)
		}
	case <-ran:
		t.Error("ran without a permit")
	case <-time.After(10 * time.Second):
		t.Error("no tick skipped within 10 s")
	}
	select {
	case <-ran:
		t.Error("ran without a permit")
	default:
	}
}

// TestClusterLimitBadInput: a limit without a valid name or with a count
// out of range is refused at Add, naming the job and the limit.
func TestClusterLimitBadInput(t *testing.T) {
	s, err := scheduler.New(scheduler.NewRedlockLocker(redlockOn(t, redistest.Start(t, 1))))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		n    int
	}{{"reports", 0}, {"reports", 65}, {"", 2}, {"a{b}", 2}, {strings.Repeat("x", 198), 12}} {
		err := s.Add("job", "@hourly", func(context.Context, scheduler.RunInfo) error { return nil }, scheduler.WithClusterLimit(tc.name, tc.n))
		if !errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), fmt.Sprintf(`job "job": WithClusterLimit: limit %q`, tc.name)) {
			t.Errorf("WithClusterLimit(%q, %d): %v; want ErrInvalidOption naming the job and the limit", tc.name, tc.n, err)
		}
	}
}

// TestClusterLimitNamedLikeJob: a limit of one permit named like its job
// (the natural "this job at most once in the fleet") runs the job: its
// permit is the lock backup#0, not the job's own lock, which the run's
// lease holds.
func TestClusterLimitNamedLikeJob(t *testing.T) {
	c := redistest.Start(t, 3)
	s, err := scheduler.New(scheduler.NewRedlockLocker(redlockOn(t, c)), scheduler.WithSeconds())
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan struct{}, 10)
	mustAdd(t, s, "backup", "* * * * * *", func(context.Context, scheduler.RunInfo) error {
		ran <- struct{}{}
		return nil
	}, scheduler.WithClusterLimit("backup", 1), scheduler.WithMisfireGrace(time.Second))
	stop := start(t, s)
	defer stop()
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Error("the job did not run within 5 s: its limit's permit is its own lock")
	}
}
