package schedulertest_test

import (
	"context"
	"fmt"

	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/scheduler/schedulertest"
)

// registrar is what registering jobs needs: *redcron.Scheduler in
// production, *scheduler.Scheduler in tests.
type registrar interface {
	Add(name, spec string, job scheduler.JobFunc, opts ...scheduler.JobOption) error
}

// register adds the service's jobs.
func register(s registrar, sent *int) error {
	return s.Add("report", "0 3 * * *", scheduler.JobFunc(func(ctx context.Context, run scheduler.RunInfo) error {
		*sent++
		fmt.Println("report sent, fence", run.Fence, "manual:", run.Tick.IsZero())
		return nil
	}))
}

// A service's jobs, tested without Redis: the same registration as in
// production, over a scheduler whose Locker is in memory; Trigger runs a
// job now, under its lock.
func Example() {
	s, err := scheduler.New(schedulertest.NewLocker())
	if err != nil {
		panic(err)
	}
	var sent int
	if err := register(s, &sent); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()

	if _, err := s.Trigger(ctx, "report"); err != nil {
		panic(err)
	}
	if err := s.Shutdown(context.Background()); err != nil { // waits for the run
		panic(err)
	}
	cancel()
	<-done
	fmt.Println("sent:", sent)
	// Output:
	// report sent, fence 1 manual: true
	// sent: 1
}
