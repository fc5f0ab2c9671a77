// End-to-end tests: several scheduler replicas in one process, each with
// its own clients, against real redis-server masters, recording every
// execution (the fleet of fleet_test.go): exactly once per tick, node
// failures, stalled replicas, overlap policies, one-time jobs. The
// system's tests under faults and across processes are in systemtest/.
package redcron_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// TestMain silences go-redis's logging of the failed dials that the
// tests' killed and stopped servers cause on purpose.
func TestMain(m *testing.M) {
	redistest.QuietClients()
	os.Exit(m.Run())
}

const everySecond = "* * * * * *"

// quick is a job that takes a few milliseconds.
func quick(context.Context, scheduler.RunInfo, int) error {
	time.Sleep(5 * time.Millisecond)
	return nil
}

// TestExactlyOncePerTick: every tick of 40 jobs (locked in one batch per
// tick and replica) in a 20 s window runs exactly once,
// with replica clocks in agreement, with replica clocks 150 ms and
// 400 ms fast, and so with the ticks locked 300 ms ahead (WithLockAhead).
func TestExactlyOncePerTick(t *testing.T) {
	t.Parallel()
	skewed := []time.Duration{0, 150 * time.Millisecond, 400 * time.Millisecond}
	for _, tc := range []struct {
		name    string
		offsets []time.Duration
		options []scheduler.Option
	}{
		{"no skew", nil, nil},
		{"clocks +0 +150ms +400ms", skewed, nil},
		{"lock-ahead 300ms, clocks +0 +150ms +400ms", skewed, []scheduler.Option{scheduler.WithLockAhead(300 * time.Millisecond)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFleet(t, fleetConfig{nodes: 5, replicas: 3, offsets: tc.offsets, trusted: true, options: tc.options})
			// Many jobs on one schedule: each tick's locks go in one batch.
			jobs := make([]string, 40)
			for i := range jobs {
				jobs[i] = fmt.Sprintf("tick-%02d", i)
				f.add(jobs[i], everySecond, quick, scheduler.WithLockTTL(2*time.Second))
			}
			f.start()
			from := time.Now().Add(time.Second)
			f.wait(22 * time.Second)
			for _, job := range jobs {
				f.checkOncePerTick(job, from, time.Now().Add(-time.Second))
			}
			if n := f.skipCount("no_quorum"); n != 0 {
				t.Errorf("%d ticks skipped for want of a quorum, with every node up", n)
			}
		})
	}
}

// TestOverlap: a job that takes 2.5 s on a 1 s schedule never runs twice at
// once, with its ticks locked at the tick or 400 ms ahead; the ticks it
// cannot take are counted as overlap skips.
func TestOverlap(t *testing.T) {
	t.Parallel()
	for name, options := range map[string][]scheduler.Option{
		"at the tick":      nil,
		"lock-ahead 400ms": {scheduler.WithLockAhead(400 * time.Millisecond)},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFleet(t, fleetConfig{nodes: 5, replicas: 3, trusted: true, options: options})
			f.add("slow", everySecond, func(ctx context.Context, _ scheduler.RunInfo, _ int) error {
				select {
				case <-ctx.Done():
					return context.Cause(ctx)
				case <-time.After(2500 * time.Millisecond):
					return nil
				}
			}, scheduler.WithLockTTL(time.Second))
			f.start()
			f.wait(20 * time.Second)
			f.checkNoOverlap("slow")
			f.checkFences("slow")
			execs := f.executions()
			if len(execs) < 5 {
				t.Fatalf("only %d runs in 20 s", len(execs))
			}
			for _, e := range execs {
				if e.cause != nil && !e.end.After(time.Now().Add(-time.Second)) {
					t.Errorf("run of tick %s was cancelled: %v", e.tick.Format("15:04:05"), e.cause)
				}
			}
			// Each replica sees about two overlapping ticks per run.
			if n := f.skipCount("overlap"); n < len(execs) {
				t.Errorf("%d overlap skips for %d runs of a 2.5 s job every second", n, len(execs))
			}
		})
	}
}

// TestNodeFailures: with 2 of 5 nodes killed mid-run no tick is missed or
// doubled; with 3 killed nothing runs (but a lease won before, until its
// validity runs out); when they come back (empty, so not voting for the
// max TTL, nor for ticks until the max TTL and the 2 s skew margin after
// their restart) runs resume, still exactly once per tick. With the ticks locked
// at the tick, and 300 ms ahead.
func TestNodeFailures(t *testing.T) {
	t.Parallel()
	for _, ahead := range []time.Duration{0, 300 * time.Millisecond} {
		t.Run(fmt.Sprintf("lock-ahead %v", ahead), func(t *testing.T) {
			t.Parallel()
			const maxTTL = 3 * time.Second
			f := newFleet(t, fleetConfig{nodes: 5, replicas: 3, maxTTL: maxTTL,
				options: []scheduler.Option{scheduler.WithLockAhead(ahead)}})
			f.add("tick", everySecond, quick, scheduler.WithLockTTL(2*time.Second))
			f.start()
			// A brand-new cluster votes after the max TTL, and for ticks from
			// the max TTL and 3 s after its start on (2 s of clock skew margin,
			// 1 s for the uptime's whole seconds), which the client may
			// reckon up to a second late.
			f.wait(maxTTL + 4*time.Second)
			from := time.Now()
			f.wait(5 * time.Second)
			f.cluster.Node(0).Kill()
			f.cluster.Node(3).Kill()
			f.wait(6 * time.Second)
			f.cluster.Node(1).Kill()
			lost := time.Now()
			f.checkOncePerTick("tick", from, lost.Add(-time.Second))

			f.wait(5 * time.Second)
			back := time.Now()
			for _, i := range []int{0, 1, 3} {
				f.cluster.Node(i).Restart()
			}
			up := time.Now() // the last server restarted
			f.wait(maxTTL + 13*time.Second)
			// A lease won before the third node died may still start its
			// run at its tick, up to the lead later.
			for _, e := range f.executions() {
				if e.start.After(lost.Add(ahead+200*time.Millisecond)) && e.start.Before(back) {
					t.Errorf("tick %s ran at %s, with 3 of 5 nodes down", e.tick.Format("15:04:05"), e.start.Format("15:04:05.000"))
				}
			}
			// A changed run id dates the restart from when a replica first
			// sees it, which the node's backoff (up to 2 s) may delay.
			f.checkOncePerTick("tick", up.Add(maxTTL+6*time.Second), time.Now().Add(-time.Second))
		})
	}
}

// TestStalledReplica: the replica running a long job loses its connections
// to every node past the lock TTL. Its job's context is cancelled with
// mutex.ErrLost; another replica runs a later tick; and a fenced store
// refuses the stale replica's late write.
func TestStalledReplica(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetConfig{nodes: 5, replicas: 3, trusted: true, proxies: true})
	ctx := context.Background()
	data := f.cluster.Node(4).Client(t) // the store the job writes to, fenced
	var (
		runs       atomic.Int32
		firstStart = make(chan int, 1)       // the stalled replica
		newerWrote = make(chan struct{})     // the next holder (run 2) wrote
		staleWrite = make(chan error, 1)     // nil if the stale write was refused
		lostCause  = make(chan error, 1)     // the stalled job's cause
		nextRun    = make(chan execution, 1) // the next run (run 2)
	)
	f.add("long", everySecond, func(jctx context.Context, info scheduler.RunInfo, replica int) error {
		switch runs.Add(1) {
		case 1: // the run that stalls, below
		case 2: // the next holder: the only run that writes after the first
			ok, err := store.FencedSet(ctx, data, "report", info.Fence, fmt.Sprintf("replica %d", replica))
			if err == nil && !ok {
				err = errors.New("the new holder's write was refused")
			}
			nextRun <- execution{replica: replica, tick: info.Tick, fence: info.Fence, start: time.Now()}
			close(newerWrote)
			return err
		default: // later ticks leave the store alone
			return nil
		}
		if _, err := store.FencedSet(ctx, data, "report", info.Fence, "first"); err != nil {
			return err
		}
		firstStart <- replica
		<-jctx.Done()
		lostCause <- context.Cause(jctx)
		// A paused process wakes up and writes with its old token.
		select {
		case <-newerWrote:
		case <-time.After(20 * time.Second):
			staleWrite <- errors.New("no newer holder wrote within 20 s")
			return nil
		}
		ok, err := store.FencedSet(ctx, data, "report", info.Fence, "stale")
		switch {
		case err != nil:
			staleWrite <- err
		case ok:
			staleWrite <- errors.New("the stale write was accepted")
		default:
			staleWrite <- nil
		}
		return nil
	}, scheduler.WithLockTTL(time.Second))
	f.start()

	var stalled int
	select {
	case stalled = <-firstStart:
	case <-time.After(10 * time.Second):
		t.Fatal("the long job never started")
	}
	for _, p := range f.replicas[stalled].proxies {
		p.Cut()
	}
	cutAt := time.Now()
	t.Cleanup(func() {
		for _, p := range f.replicas[stalled].proxies {
			p.Heal()
		}
	})
	var cause error
	select {
	case cause = <-lostCause:
	case <-time.After(10 * time.Second):
		t.Fatal("the stalled replica's job was not cancelled")
	}
	lostAt := time.Now()
	if !errors.Is(cause, mutex.ErrLost) {
		t.Errorf("stalled job's cause: %v, want mutex.ErrLost", cause)
	}
	if took := lostAt.Sub(cutAt); took > 1500*time.Millisecond {
		t.Errorf("the stalled job was told %v after its connections were cut, with a 1 s TTL", took)
	}
	var next execution
	select {
	case next = <-nextRun:
	case <-time.After(10 * time.Second):
		t.Fatal("no other replica ran a later tick")
	}
	if next.replica == stalled {
		t.Errorf("the next tick ran on the stalled replica %d", stalled)
	}
	if !next.start.After(lostAt) {
		t.Errorf("the next run started at %v, before the stalled job was told (%v)", next.start, lostAt)
	}
	select {
	case err := <-staleWrite:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stale write never happened")
	}
	if v, fence, err := store.FencedGet(ctx, data, "report"); err != nil || fence != next.fence {
		t.Errorf("store holds %q with fence %d (%v), want the new holder's fence %d", v, fence, err, next.fence)
	}
}

// TestShutdownReleases: shutting down the replica running a job cancels it
// with ErrShutdown and releases the lease, so another replica runs the
// next tick at once rather than after the 20 s TTL.
func TestShutdownReleases(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetConfig{nodes: 5, replicas: 3, trusted: true})
	var (
		runs      atomic.Int32
		first     = make(chan int, 1)
		firstWhy  = make(chan error, 1)
		secondRan = make(chan execution, 1)
	)
	f.add("job", everySecond, func(ctx context.Context, info scheduler.RunInfo, replica int) error {
		if runs.Add(1) > 1 {
			select {
			case secondRan <- execution{replica: replica, tick: info.Tick, start: time.Now()}:
			default:
			}
			return nil
		}
		first <- replica
		<-ctx.Done()
		firstWhy <- context.Cause(ctx)
		return context.Cause(ctx)
	}, scheduler.WithLockTTL(20*time.Second))
	f.start()
	var holder int
	select {
	case holder = <-first:
	case <-time.After(10 * time.Second):
		t.Fatal("the job never started")
	}
	stoppedAt := time.Now()
	if err := f.shutdown(f.replicas[holder], 300*time.Millisecond); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	select {
	case cause := <-firstWhy:
		if !errors.Is(cause, scheduler.ErrShutdown) {
			t.Errorf("cause %v, want ErrShutdown", cause)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the job was not cancelled within 30 s of its replica's shutdown")
	}
	select {
	case next := <-secondRan:
		if next.replica == holder {
			t.Errorf("the next run was on the replica that shut down")
		}
		if wait := next.start.Sub(stoppedAt); wait > 3*time.Second {
			t.Errorf("the next run started %v after the shutdown", wait)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no other replica ran the job within 10 s of the shutdown (the lease was not released?)")
	}
}

// The overlap policies (scheduler.WithOverlap), with a job that takes
// longer than its one-second interval.

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

// TestOnceJobInTheFleet: a one-time job ("@at t") registered by three
// replicas over real Redis masters runs once, at t; after it ran, a rolling
// restart (each replica shut down in turn and a new one registering the
// job, within its grace) does not run it again: the tick's mark on the
// nodes refuses it; no replica has a tick of it left. An @at time further
// back than the Redlock keeps a tick's mark is refused at Add.
func TestOnceJobInTheFleet(t *testing.T) {
	t.Parallel()
	events := make(chan scheduler.Event, 16)
	f := newFleet(t, fleetConfig{nodes: 3, replicas: 6, trusted: true, options: []scheduler.Option{
		scheduler.WithObserver(func(e scheduler.Event) {
			if e.Job == "launch" && (e.Kind == "skipped" || e.Kind == "run_finished") {
				events <- e
			}
		}),
	}})
	at := time.Now().Add(2 * time.Second).Truncate(time.Second)
	spec := "@at " + at.UTC().Format(time.RFC3339)
	first, late := f.replicas[:3], f.replicas[3:]
	f.addOn(first, "launch", spec, quick)
	f.startOn(first)

	// handled waits for n events of the job: a run's end or a refusal.
	handled := func(n int) {
		t.Helper()
		for range n {
			select {
			case e := <-events:
				if e.Kind == "skipped" && e.Skip != "held" && e.Skip != "already_run" {
					t.Errorf("%s: tick %v skipped: %s (%v)", e.Instance, e.Tick, e.Skip, e.Err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the replicas did not all handle the job's tick within 30 s")
			}
		}
	}
	handled(3) // one run, two refusals
	for i := range late {
		if err := f.shutdown(first[i], 5*time.Second); err != nil {
			t.Errorf("%s: Shutdown: %v", first[i].id, err)
		}
		f.addOn(late[i:i+1], "launch", spec, quick)
		f.startOn(late[i : i+1])
		handled(1) // the new replica's refusal
	}

	if ex := f.executions(); len(ex) != 1 || !ex[0].tick.Equal(at) {
		t.Errorf("executions %+v, want one, of %v", ex, at)
	}
	if n := f.skipCount("already_run") + f.skipCount("held"); n != 5 {
		t.Errorf("%d refusals, want 5", n)
	}
	for _, r := range late {
		if e := r.sched.Entries(); len(e) != 1 || !e[0].Next.IsZero() {
			t.Errorf("%s: entries %+v, want the job with no tick left", r.id, e)
		}
	}

	old := "@at " + time.Now().AddDate(-1, 0, 0).UTC().Format(time.RFC3339)
	err := late[0].sched.Add("old-launch", old, scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil }))
	if !errors.Is(err, scheduler.ErrInvalidJob) || !errors.Is(err, mutex.ErrInvalidOption) {
		t.Errorf("Add(%q) = %v, want ErrInvalidJob and the Redlock's refusal", old, err)
	}
}

// TestOnceJobHolderShutDown: over real Redis masters, the replica whose
// clock is fastest, which would claim the one-time job's tick, is shut down
// just before its time; another replica runs the job, once.
func TestOnceJobHolderShutDown(t *testing.T) {
	t.Parallel()
	events := make(chan scheduler.Event, 16)
	f := newFleet(t, fleetConfig{nodes: 3, replicas: 3, trusted: true,
		offsets: []time.Duration{400 * time.Millisecond, 0, 100 * time.Millisecond},
		options: []scheduler.Option{scheduler.WithObserver(func(e scheduler.Event) {
			if e.Kind == "skipped" || e.Kind == "run_finished" {
				events <- e
			}
		})}})
	at := time.Now().Add(2 * time.Second).Truncate(time.Second)
	f.add("launch", "@at "+at.UTC().Format(time.RFC3339), quick)
	f.start()
	time.Sleep(time.Until(at.Add(-500 * time.Millisecond))) // replica-0's clock reads 100 ms before the tick
	if err := f.shutdown(f.replicas[0], 5*time.Second); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	// The two replicas left handle the tick: one run, one refusal.
	for range 2 {
		select {
		case e := <-events:
			if e.Instance == f.replicas[0].id {
				t.Errorf("the replica shut down before the tick handled it: %s %s", e.Kind, e.Skip)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the replicas left did not handle the tick within 30 s of its time")
		}
	}
	if ex := f.executions(); len(ex) != 1 || !ex[0].tick.Equal(at) || ex[0].replica == 0 {
		t.Errorf("executions %+v, want one, of %v, not on replica-0", ex, at)
	}
}
