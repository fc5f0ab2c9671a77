// End-to-end tests of the overlap policies (scheduler.WithOverlap): three
// replicas against five real redis-server masters, with a job that takes
// longer than its one-second interval.
package redcron_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redcron/redcron/scheduler"
)

// untilCancelled is a job that runs until its context is done.
func untilCancelled(ctx context.Context, _ scheduler.RunInfo, _ int) error {
	<-ctx.Done()
	return context.Cause(ctx)
}

// taking returns a job that takes d, or less if its context is done.
func taking(d time.Duration) jobFunc {
	return func(ctx context.Context, _ scheduler.RunInfo, _ int) error {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(d):
			return nil
		}
	}
}

// TestOverlapReplace: a job that runs until cancelled, every second,
// under OverlapReplace: whichever replica runs it cancels it at the next
// tick, with a cause matching ErrReplaced, and the next tick runs right
// after, once: every tick runs, one run at a time, with increasing fences.
func TestOverlapReplace(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetConfig{nodes: 5, replicas: 3, trusted: true})
	f.add("replaced", everySecond, untilCancelled,
		scheduler.WithLockTTL(2*time.Second), scheduler.WithOverlap(scheduler.OverlapReplace))
	f.start()
	from := time.Now().Add(time.Second)
	f.wait(9 * time.Second)
	// A tick's run ends when the next tick replaces it, a second later.
	f.checkOncePerTick("replaced", from, time.Now().Add(-2*time.Second))
	f.checkNoOverlap("replaced")
	on := map[int]int{}
	for _, e := range f.executions() {
		on[e.replica]++
		if !errors.Is(e.cause, scheduler.ErrReplaced) {
			t.Errorf("run of tick %s ended with cause %v, want ErrReplaced", e.tick.Format("15:04:05"), e.cause)
		}
		if late := e.start.Sub(e.tick); late > 500*time.Millisecond {
			t.Errorf("run of tick %s started %v after its tick", e.tick.Format("15:04:05"), late)
		}
	}
	t.Logf("runs by replica: %v", on)
	// A run's run_finished event follows its job's return (the lease's
	// release comes between): give the last one a moment.
	want := len(f.executions())
	for end := time.Now().Add(5 * time.Second); f.resultCount("canceled") < want && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond) // polls the events recorded; nothing to wait on
	}
	if n := f.resultCount("canceled"); n < want {
		t.Errorf("%d runs reported canceled, want %d", n, want)
	}
	for _, r := range f.replicas { // the job returns only when cancelled
		if err := f.shutdown(r, 300*time.Millisecond); err != nil {
			t.Errorf("%s: Shutdown: %v", r.id, err)
		}
	}
}

// TestOverlapQueueOne: a 2.3 s job every second under OverlapQueueOne:
// each run starts right after the previous one ended, with the latest
// tick that came meanwhile; the older ticks are skipped as overlap. One
// run at a time, never a tick twice, with increasing fences.
func TestOverlapQueueOne(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetConfig{nodes: 5, replicas: 3, trusted: true})
	f.add("queued", everySecond, taking(2300*time.Millisecond),
		scheduler.WithLockTTL(2*time.Second), scheduler.WithOverlap(scheduler.OverlapQueueOne))
	f.start()
	f.wait(12 * time.Second)
	f.checkNoOverlap("queued")
	f.checkFences("queued")
	execs := f.executions()
	if len(execs) < 4 {
		t.Fatalf("only %d runs in 12 s", len(execs))
	}
	seen := map[int64]bool{}
	for i, e := range execs {
		if seen[e.tick.UnixMilli()] {
			t.Errorf("tick %s ran twice", e.tick.Format("15:04:05"))
		}
		seen[e.tick.UnixMilli()] = true
		if i == 0 {
			continue
		}
		prev := execs[i-1]
		if gap := e.start.Sub(prev.end); !e.tick.Before(prev.end) || gap > 400*time.Millisecond {
			t.Errorf("run of tick %s (replica %d) started %v after the run of tick %s ended at %s; want a tick that waited, within 400 ms",
				e.tick.Format("15:04:05"), e.replica, gap, prev.tick.Format("15:04:05"), prev.end.Format("15:04:05.000"))
		}
	}
	if f.skipCount("overlap") == 0 {
		t.Error("no tick was skipped as overlap: a newer waiting tick replaces an older one")
	}
}

// TestOverlapQueueOneElsewhere: the replica running a 2.5 s job under
// OverlapQueueOne shuts down gracefully, so it handles no more ticks but
// finishes its run; another replica's waiting tick runs right after that
// run's lease is released.
func TestOverlapQueueOneElsewhere(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetConfig{nodes: 5, replicas: 3, trusted: true})
	starts := make(chan execution, 100)
	wait := taking(2500 * time.Millisecond)
	f.add("queued", everySecond, func(ctx context.Context, info scheduler.RunInfo, replica int) error {
		select {
		case starts <- execution{replica: replica, tick: info.Tick, fence: info.Fence, start: time.Now()}:
		default:
		}
		return wait(ctx, info, replica)
	}, scheduler.WithLockTTL(2*time.Second), scheduler.WithOverlap(scheduler.OverlapQueueOne))
	f.start()
	next := func(within time.Duration) execution {
		t.Helper()
		select {
		case e := <-starts:
			return e
		case <-time.After(within):
			t.Fatalf("no run started within %v", within)
		}
		panic("unreachable")
	}
	holder := next(10 * time.Second).replica
	if err := f.shutdown(f.replicas[holder], 10*time.Second); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	after := next(5 * time.Second)
	ran := f.executions()[0] // the stopped replica's run, ended
	if ran.replica != holder || ran.cause != nil {
		t.Fatalf("first run on replica %d (cause %v), want replica %d's, run to its end", ran.replica, ran.cause, holder)
	}
	if gap := after.start.Sub(ran.end); after.replica == holder || !after.tick.Before(ran.end) || gap < 0 || gap > 1500*time.Millisecond {
		t.Errorf("next run: tick %s on replica %d, %v after the first run ended at %s; want a tick that waited, on another replica, within 1.5 s",
			after.tick.Format("15:04:05.000"), after.replica, gap, ran.end.Format("15:04:05.000"))
	}
	if after.fence <= ran.fence {
		t.Errorf("next run's fence %d, not above the first's %d", after.fence, ran.fence)
	}
}

// resultCount returns the number of runs reported with result r.
func (f *fleet) resultCount(r string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.results[r]
}
