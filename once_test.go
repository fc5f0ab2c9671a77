package redcron_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

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
