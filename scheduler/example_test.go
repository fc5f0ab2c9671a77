package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// Every replica of a service runs the same scheduler with the same jobs;
// the Locker (Redis in production, in memory here) picks one replica per
// tick. Trigger runs a job at once, still under its lock.
func Example() {
	locker := schedulertest.NewLocker()
	s, err := scheduler.New(locker, scheduler.WithInstanceID("replica-a"))
	if err != nil {
		log.Fatal(err)
	}
	done := make(chan struct{})
	err = s.Add("nightly-report", "0 3 * * *", scheduler.JobFunc(func(ctx context.Context, info scheduler.RunInfo) error {
		defer close(done)
		fmt.Printf("%s runs on %s with fence %d\n", info.Job, info.Instance, info.Fence)
		return nil
	}))
	if err != nil {
		log.Fatal(err)
	}

	errc := make(chan error, 1)
	go func() { errc <- s.Run(context.Background()) }()

	if _, err := s.Trigger(context.Background(), "nightly-report"); err != nil {
		log.Fatal(err)
	}
	<-done

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("Run:", <-errc)
	// Output:
	// nightly-report runs on replica-a with fence 1
	// Run: scheduler: closed
}

// An Observer sees every outcome; metrics use the String labels of its
// enums.
func ExampleWithObserver() {
	finished := make(chan struct{})
	obs := observerFunc(func(ev scheduler.Event) {
		switch ev.Kind {
		case "run_started":
			fmt.Println(ev.Kind, ev.Job)
		case "run_finished":
			fmt.Println(ev.Kind, ev.Job, ev.Result, ev.Err)
			close(finished)
		}
	})
	s, err := scheduler.New(schedulertest.NewLocker(), scheduler.WithObserver(obs.Observe))
	if err != nil {
		log.Fatal(err)
	}
	err = s.Add("cleanup", "@hourly", scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error {
		return errors.New("disk full")
	}))
	if err != nil {
		log.Fatal(err)
	}
	go s.Run(context.Background())
	if _, err := s.Trigger(context.Background(), "cleanup"); err != nil {
		log.Fatal(err)
	}
	<-finished
	_ = s.Shutdown(context.Background())
	// Output:
	// run_started cleanup
	// run_finished cleanup failure disk full
}

type observerFunc func(scheduler.Event)

func (f observerFunc) Observe(ev scheduler.Event) { f(ev) }

// Add reports bad input at once, naming the job and the spec.
func ExampleScheduler_Add() {
	s, err := scheduler.New(schedulertest.NewLocker())
	if err != nil {
		log.Fatal(err)
	}
	noop := scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil })

	err = s.Add("backup", "0 25 * * *", noop)
	fmt.Println(errors.Is(err, scheduler.ErrInvalidJob), err)

	err = s.Add("ticker", "@every 1500ms", noop)
	fmt.Println(errors.Is(err, scheduler.ErrInvalidJob), err)

	_ = s.Add("backup", "CRON_TZ=Europe/Paris 0 3 * * *", noop)
	err = s.Add("backup", "@daily", noop)
	fmt.Println(errors.Is(err, scheduler.ErrDuplicateJob), err)
	// Output:
	// true scheduler: invalid job "backup": spec "0 25 * * *": end of range (25) above maximum (23): 25
	// true scheduler: invalid job "ticker": spec "@every 1500ms": @every 1.5s: want a whole number of seconds, at least 1s
	// true scheduler: duplicate job name: "backup"
}

// New validates its options.
func ExampleNew() {
	_, err := scheduler.New(schedulertest.NewLocker(), scheduler.WithLockAhead(2*time.Minute))
	fmt.Println(errors.Is(err, mutex.ErrInvalidOption), err)
	// Output:
	// true redcron: invalid option: WithLockAhead: lead 2m0s is not between 0 and 1m0s
}

// With lock-ahead, the lease of each tick is won before the tick and the run
// starts at the tick, so that the lock's round trips (many of them, when
// many jobs are due at once) do not delay it.
func ExampleWithLockAhead() {
	locker := schedulertest.NewLocker()
	s, err := scheduler.New(locker, scheduler.WithSeconds(), scheduler.WithLockAhead(200*time.Millisecond))
	if err != nil {
		log.Fatal(err)
	}
	type start struct {
		info scheduler.RunInfo
		at   time.Time
	}
	started := make(chan start, 2)
	err = s.Add("every-second", "* * * * * *", scheduler.JobFunc(func(ctx context.Context, info scheduler.RunInfo) error {
		select {
		case started <- start{info, time.Now()}:
		default:
		}
		return nil
	}))
	if err != nil {
		log.Fatal(err)
	}
	go s.Run(context.Background())
	<-started // the first tick may come too soon after Run to be locked ahead
	run := <-started
	_ = s.Shutdown(context.Background())

	for _, g := range locker.Grants() {
		if g.Fence == run.info.Fence {
			fmt.Println("lease won before the tick:", g.Acquired.Before(run.info.Tick))
		}
	}
	fmt.Println("run started at or after the tick:", !run.at.Before(run.info.Tick))
	// Output:
	// lease won before the tick: true
	// run started at or after the tick: true
}

// A job's own observer, given at Add, is gocron's event listeners: it sees
// the events of its job on this replica, before each run (run_started),
// after it (run_finished: success, failure, panic...), and the ticks this
// replica did not run (skipped, with the reason).
func ExampleWithJobObserver() {
	finished := make(chan struct{})
	listen := func(ev scheduler.Event) {
		switch {
		case ev.Kind == "run_started":
			fmt.Println("before the run of", ev.Job)
		case ev.Kind == "run_finished" && ev.Result == "success":
			fmt.Println("after the success of", ev.Job)
		case ev.Kind == "run_finished" && ev.Result == "panic":
			fmt.Println("after the panic of", ev.Job+":", ev.Err)
		case ev.Kind == "run_finished":
			fmt.Println("after the error of", ev.Job+":", ev.Result, ev.Err)
		case ev.Kind == "skipped":
			fmt.Println("tick", ev.Tick, "not run here:", ev.Skip)
		}
		if ev.Kind == "run_finished" {
			close(finished)
		}
	}
	s, err := scheduler.New(schedulertest.NewLocker())
	if err != nil {
		log.Fatal(err)
	}
	err = s.Add("invoices", "@daily", func(context.Context, scheduler.RunInfo) error {
		panic("no invoice template")
	}, scheduler.WithJobObserver(listen))
	if err != nil {
		log.Fatal(err)
	}
	go s.Run(context.Background())
	if _, err := s.Trigger(context.Background(), "invoices"); err != nil {
		log.Fatal(err)
	}
	<-finished
	_ = s.Shutdown(context.Background())
	// Output:
	// before the run of invoices
	// after the panic of invoices: scheduler: job "invoices" panicked: no invoice template
}
