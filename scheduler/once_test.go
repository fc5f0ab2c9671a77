package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/internal/lockcheck"
	"github.com/redcron/redcron/scheduler"
)

// atSpec returns the spec of a one-time job at t.
func atSpec(t time.Time) string { return "@at " + t.UTC().Format(time.RFC3339) }

// TestAtSpecTicksOnce: "@at t" has t as its next tick before t, given with
// any offset, and none after it.
func TestAtSpecTicksOnce(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 34, 56, 0, time.UTC)
	at := time.Date(2025, 3, 10, 13, 0, 0, 0, time.UTC)
	for _, spec := range []string{"@at 2025-03-10T13:00:00Z", "@at 2025-03-10T22:00:00+09:00", "  @at   2025-03-10T13:00:00Z "} {
		if got := nextTick(t, now, spec); !got.Equal(at) {
			t.Errorf("next tick of %q at %v = %v, want %v", spec, now, got, at)
		}
	}
	// Past its misfire grace (a minute by default), it has no tick.
	if got := nextTick(t, at.Add(2*time.Minute), atSpec(at)); !got.IsZero() {
		t.Errorf("next tick of %q two minutes after it = %v, want none", atSpec(at), got)
	}
	// Within it, its tick is still to run: a replica starting just after
	// it catches it up (the tick's mark tells whether another ran it).
	if got := nextTick(t, at.Add(30*time.Second), atSpec(at)); !got.Equal(at) {
		t.Errorf("next tick of %q 30s after it = %v, want %v", atSpec(at), got, at)
	}
}

func TestAddRejectsBadAtSpecs(t *testing.T) {
	for _, tt := range []struct{ spec, says string }{
		{"@at", "one time"},
		{"@at soon", "RFC 3339"},
		{"@at 2026-11-28T00:00:00", "RFC 3339"},          // no offset
		{"@at 2026-11-28", "RFC 3339"},                   // no time
		{"@at 2026-11-28T00:00:00.5Z", "whole number"},   // not whole seconds
		{"@at 2026-11-28T00:00:00Z 2m", "one time"},      // two arguments
		{"CRON_TZ=UTC @at 2026-11-28T00:00:00Z", "zone"}, // the offset says it
		{"@at 2099-01-01T00:00:00Z", "five years"},
	} {
		spec := tt.spec
		err := newScheduler(t, locker()).Add("launch", spec, noop)
		if !errors.Is(err, scheduler.ErrInvalidJob) {
			t.Errorf("Add(%q) = %v, want ErrInvalidJob", spec, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, `job "launch"`) || !strings.Contains(msg, `spec "`+spec+`"`) || !strings.Contains(msg, tt.says) {
			t.Errorf("error %q does not name the job and the spec, and say %q", msg, tt.says)
		}
	}
}

// shortMemoryLocker refuses, as the Redlock adapter's check does, a
// reach longer than the hour it keeps a tick's mark.
type shortMemoryLocker struct{ scheduler.Locker }

var errForgets = errors.New("reach longer than the mark is kept")

// AcquireAll offers, with no requests (New's call), its check and then
// the inner Locker's.
func (l shortMemoryLocker) AcquireAll(ctx context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	if len(reqs) > 0 {
		return l.Locker.AcquireAll(ctx, reqs)
	}
	inner := lockcheck.Of(l.Locker.AcquireAll, "")
	lockcheck.Offer(ctx, func(req scheduler.LockRequest) error {
		if req.Reach > time.Hour {
			return fmt.Errorf("%w: %v", errForgets, req.Reach)
		}
		return inner(req)
	})
	return nil
}

// TestAddRefusesAnAtTheLockForgets: an @at time further back than the
// Locker keeps a tick's mark is refused, naming the job, since whether it
// ran can no longer be told; one within it is accepted, and is done (no
// tick) once past its grace.
func TestAddRefusesAnAtTheLockForgets(t *testing.T) {
	now := time.Date(2025, 3, 10, 12, 0, 0, 0, time.UTC)
	s := newScheduler(t, shortMemoryLocker{locker()}, scheduler.WithClock(fixedClock(now)))
	spec := atSpec(now.Add(-2 * time.Hour))
	err := s.Add("launch", spec, noop)
	if !errors.Is(err, scheduler.ErrInvalidJob) || !errors.Is(err, errForgets) {
		t.Fatalf("Add(%q) = %v, want ErrInvalidJob wrapping the Locker's refusal", spec, err)
	}
	if msg := err.Error(); !strings.Contains(msg, `job "launch"`) || !strings.Contains(msg, "2h0m0s past") {
		t.Errorf("error %q does not name the job and how far back its time is", msg)
	}
	for _, past := range []time.Duration{59 * time.Minute, 30 * time.Second} {
		if err := s.Add(fmt.Sprint("launch-", past), atSpec(now.Add(-past)), noop); err != nil {
			t.Errorf("@at %v ago: %v", past, err)
		}
	}
	// The reach of a job's requests is still its grace, not how far back
	// its time is: its ticks are claimed within the grace only.
	if err := s.Add("later", atSpec(now.Add(time.Hour)), noop, scheduler.WithMisfireGrace(2*time.Hour)); !errors.Is(err, errForgets) {
		t.Errorf("a grace of 2h: Add = %v, want the Locker's refusal", err)
	}
	entries := s.Entries()
	if len(entries) != 2 || !entries[0].Next.Equal(now.Add(-30*time.Second)) || !entries[1].Next.IsZero() {
		t.Errorf("entries %+v: want the job 30s late with its tick, the one 59m late without", entries)
	}
}

// TestOnceRunsOnceAcrossReplicas: three replicas register a one-time job;
// it runs once, at its time, and is done on all of them; a replica
// registering it afterwards, within its grace or past it, does not run it
// again.
func TestOnceRunsOnceAcrossReplicas(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		at := time.Now().Add(time.Minute).Truncate(time.Second)
		l := locker()
		var log runLog
		obs := &recorder{}
		var stops []func()
		var replicas []*scheduler.Scheduler
		for i := range 3 {
			s := newScheduler(t, l, scheduler.WithInstanceID(fmt.Sprint("replica-", i)), scheduler.WithObserver(obs.Observe))
			mustAdd(t, s, "launch", atSpec(at), log.job(time.Second))
			stops = append(stops, start(t, s))
			replicas = append(replicas, s)
		}
		sleepUntil(at.Add(20 * time.Second))
		// Within its grace: a new replica tries, and is refused.
		late := newScheduler(t, l, scheduler.WithInstanceID("late"), scheduler.WithObserver(obs.Observe))
		mustAdd(t, late, "launch", atSpec(at), log.job(time.Second))
		stops = append(stops, start(t, late))
		sleepUntil(at.Add(5 * time.Minute))
		// Past it: a new replica has nothing to run.
		later := newScheduler(t, l, scheduler.WithInstanceID("later"))
		mustAdd(t, later, "launch", atSpec(at), log.job(time.Second))
		stops = append(stops, start(t, later))
		sleepUntil(at.Add(10 * time.Minute))
		for i, s := range append(replicas, late, later) {
			if e := s.Entries()[0]; !e.Next.IsZero() {
				t.Errorf("replica %d: next tick %v after the one-time job ran, want none", i, e.Next)
			}
		}
		stopAll(stops...)
		if runs := log.all(); len(runs) != 1 || !runs[0].Tick.Equal(at) {
			t.Fatalf("runs %+v, want one, of %v", runs, at)
		}
		if n := len(obs.skips("already_run")) + len(obs.skips("held")); n != 3 {
			t.Errorf("%d refusals (held or already run), want 3: two replicas at the tick, the late one", n)
		}
	})
}

// TestOnceCaughtUpAfterAnOutage: a cluster down at the job's time runs it
// once when it is back within its grace, or its catch-up window; not when
// back later.
func TestOnceCaughtUpAfterAnOutage(t *testing.T) {
	for _, tt := range []struct {
		name string
		back time.Duration
		opts []scheduler.JobOption
		runs int
	}{
		{"within the grace", 40 * time.Second, nil, 1},
		{"within the catch-up window", 20 * time.Minute, []scheduler.JobOption{scheduler.WithCatchUp(time.Hour)}, 1},
		{"past the grace", 2 * time.Minute, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				at := time.Now().Add(time.Minute)
				sleepUntil(at.Add(tt.back))
				l := locker()
				var log runLog
				var stops []func()
				for i := range 3 {
					s := newScheduler(t, l, scheduler.WithInstanceID(fmt.Sprint("replica-", i)))
					mustAdd(t, s, "launch", atSpec(at), log.job(time.Second), tt.opts...)
					stops = append(stops, start(t, s))
				}
				sleepUntil(at.Add(tt.back + time.Minute))
				stopAll(stops...)
				if runs := log.all(); len(runs) != tt.runs || tt.runs == 1 && !runs[0].Tick.Equal(at) {
					t.Errorf("runs %+v, want %d of %v", runs, tt.runs, at)
				}
			})
		})
	}
}

// TestOnceHolderShutDownAtItsTime: a replica shut down around the job's
// time does not cost its one run. Shut down before it claimed the tick (its
// clock is the fastest: it would have won), another replica runs it; shut
// down after it won the tick ahead (WithLockAhead), it runs it at the tick
// before its Shutdown returns. Either way the job runs once.
func TestOnceHolderShutDownAtItsTime(t *testing.T) {
	for _, tt := range []struct {
		name      string
		lockAhead time.Duration
		stop      time.Duration // when replica-0 is shut down, from the tick (real time)
		ranOn     func(int) bool
	}{
		{"before it claimed the tick", 0, -500 * time.Millisecond, func(i int) bool { return i != 0 }},
		{"after it won the tick ahead", 2 * time.Second, -time.Second, func(i int) bool { return i == 0 }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				at := time.Now().Add(time.Minute)
				l := locker()
				var log runLog
				ran := make(chan int, 3)
				var stops []func()
				for i, off := range []time.Duration{400 * time.Millisecond, 0, 100 * time.Millisecond} {
					s := newScheduler(t, l, scheduler.WithInstanceID(fmt.Sprint("replica-", i)),
						scheduler.WithClock(offsetClock(off)), scheduler.WithLockAhead(tt.lockAhead))
					job := log.job(time.Second)
					mustAdd(t, s, "launch", atSpec(at), func(ctx context.Context, info scheduler.RunInfo) error {
						ran <- i
						return job(ctx, info)
					})
					stops = append(stops, start(t, s))
				}
				sleepUntil(at.Add(tt.stop))
				stops[0]()
				sleepUntil(at.Add(time.Minute))
				stopAll(stops[1:]...)
				if runs := log.all(); len(runs) != 1 || !runs[0].Tick.Equal(at) {
					t.Fatalf("runs %+v, want one, of %v", runs, at)
				}
				if i := <-ran; !tt.ranOn(i) {
					t.Errorf("ran on replica-%d", i)
				}
			})
		})
	}
}
