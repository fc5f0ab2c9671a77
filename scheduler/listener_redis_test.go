package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/scheduler"
)

// listened is one call of a job's observer: the replica whose observer it
// was, and the event.
type listened struct {
	replica, job string
	ev           scheduler.Event
}

// TestJobObserverFleet: over three schedulers sharing one Redlock on three
// real redis-servers, each job's observer (WithJobObserver) is called once
// per run start and once per run end, on the replica that ran it (the
// run's RunInfo.Instance), with the run's result (success, failure,
// panic); its skips come only from the replicas that did not run the tick;
// it hears no other job's events. A job whose observer panics at every
// event runs at every tick all the same, its runs reported finished to
// the scheduler-wide observers and the panics logged.
func TestJobObserverFleet(t *testing.T) {
	c := redistest.Start(t, 3)
	var mu sync.Mutex
	var heard []listened
	ran := map[string]string{} // run id → the replica that ran it
	finished := map[string]int{}
	var logs lockedBuffer
	jobs := map[string]func() error{
		"ok":       func() error { return nil },
		"fails":    func() error { return errors.New("failed") },
		"panics":   func() error { panic("boom") },
		"loud-obs": func() error { return nil },
	}
	var stops []func()
	for i := range 3 {
		id := fmt.Sprintf("replica-%d", i)
		s, err := scheduler.New(scheduler.NewRedlockLocker(redlockOn(t, c)), scheduler.WithSeconds(), scheduler.WithInstanceID(id),
			scheduler.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))),
			scheduler.WithObserver(func(ev scheduler.Event) {
				if ev.Kind == "run_finished" && ev.Job == "loud-obs" && ev.Result == "success" {
					mu.Lock()
					finished[ev.RunID]++
					mu.Unlock()
				}
			}))
		if err != nil {
			t.Fatal(err)
		}
		for name, f := range jobs {
			listen := func(ev scheduler.Event) {
				mu.Lock()
				defer mu.Unlock()
				heard = append(heard, listened{id, name, ev})
			}
			if name == "loud-obs" {
				listen = func(ev scheduler.Event) { panic("observer of " + ev.Job + ": " + string(ev.Kind)) }
			}
			mustAdd(t, s, name, "* * * * * *", func(_ context.Context, info scheduler.RunInfo) error {
				mu.Lock()
				ran[info.RunID] = info.Instance
				mu.Unlock()
				return f()
			}, scheduler.WithJobObserver(listen))
		}
		stops = append(stops, start(t, s))
	}
	time.Sleep(4 * time.Second)
	stopAll(stops...)

	mu.Lock()
	defer mu.Unlock()
	wantResult := map[string]string{"ok": "success", "fails": "failure", "panics": "panic"}
	started, ended := map[string]int{}, map[string]int{}
	ranTick := map[string]string{} // job and tick → the replica that ran it
	for _, h := range heard {
		ev := h.ev
		if ev.Instance != h.replica || ev.Job != h.job {
			t.Errorf("the observer of %s on %s heard an event of %s on %s: %+v", h.job, h.replica, ev.Job, ev.Instance, ev)
		}
		switch ev.Kind {
		case "run_started", "run_finished":
			if ran[ev.RunID] != h.replica {
				t.Errorf("%s's observer heard %s of run %s of %s, which ran on %q", h.replica, ev.Kind, ev.RunID, ev.Job, ran[ev.RunID])
			}
			if ev.Kind == "run_started" {
				started[ev.RunID]++
				ranTick[ev.Job+" "+ev.Tick.String()] = h.replica
				continue
			}
			ended[ev.RunID]++
			if ev.Result != wantResult[ev.Job] {
				t.Errorf("run of %s at %v ended %s (%v), want %s", ev.Job, ev.Tick, ev.Result, ev.Err, wantResult[ev.Job])
			}
		}
	}
	skips := 0
	for _, h := range heard {
		if h.ev.Kind == "skipped" {
			skips++
		}
		if ev := h.ev; ev.Kind == "skipped" && ranTick[ev.Job+" "+ev.Tick.String()] == h.replica {
			t.Errorf("%s ran %s at %v and its observer heard it skipped (%s) too", h.replica, ev.Job, ev.Tick, ev.Skip)
		}
	}
	if skips == 0 {
		t.Error("no observer heard a skip: the replicas that did not run a tick say so")
	}
	runs := map[string]int{}
	for id, replica := range ran {
		if replica == "" {
			continue
		}
		job := ""
		for _, h := range heard {
			if h.ev.RunID == id {
				job = h.ev.Job
			}
		}
		if job == "" { // the panicking observer's job
			if finished[id] != 1 {
				t.Errorf("run %s of loud-obs reported finished %d times to the scheduler's observers, want once", id, finished[id])
			}
			runs["loud-obs"]++
			continue
		}
		runs[job]++
		if started[id] != 1 || ended[id] != 1 {
			t.Errorf("run %s of %s on %s: its observer heard %d starts and %d ends, want one each", id, job, replica, started[id], ended[id])
		}
	}
	for job := range jobs {
		if runs[job] < 2 {
			t.Errorf("%s ran %d times in 4 s of ticks every second, want 2 or more", job, runs[job])
		}
	}
	if out := logs.String(); !strings.Contains(out, "job observer panicked") || !strings.Contains(out, "observer of loud-obs: run_finished") {
		t.Errorf("the observer's panics were not logged:\n%.2000s", out)
	}
}
