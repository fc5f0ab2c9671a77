package schedulertest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// The Locker grants one lease per tick, refuses the tick to others while it
// is held and after it ran, and counts fences per job.
func Example() {
	l := schedulertest.NewLocker()
	ctx := context.Background()
	tick := time.Date(2025, 1, 1, 3, 0, 0, 0, time.UTC)
	req := scheduler.LockRequest{Job: "report", Tick: tick, TTL: 30 * time.Second, Owner: "replica-a"}

	lease, err := l.Acquire(ctx, req)
	fmt.Println("a:", lease.Fence(), err)

	req.Owner = "replica-b"
	_, err = l.Acquire(ctx, req)
	fmt.Println("b while a runs:", errors.Is(err, mutex.ErrHeld))

	fmt.Println("a releases:", lease.Release(ctx, scheduler.Outcome{}))
	_, err = l.Acquire(ctx, req)
	fmt.Println("b after a ran:", errors.Is(err, mutex.ErrAlreadyRun))

	req.Tick = tick.Add(24 * time.Hour)
	lease, err = l.Acquire(ctx, req)
	fmt.Println("b, next tick:", lease.Fence(), err)
	// Output:
	// a: 1 <nil>
	// b while a runs: true
	// a releases: <nil>
	// b after a ran: true
	// b, next tick: 2 <nil>
}

// LoseLease simulates a lease that can no longer be extended: the job's
// context is cancelled with mutex.ErrLost.
func ExampleLocker_LoseLease() {
	l := schedulertest.NewLocker()
	ctx := context.Background()
	lease, _ := l.Acquire(ctx, scheduler.LockRequest{Job: "report", TTL: time.Minute, Owner: "replica-a"})
	jobCtx := lease.Keep(ctx)

	l.LoseLease("report")
	<-jobCtx.Done()
	fmt.Println(errors.Is(context.Cause(jobCtx), mutex.ErrLost))
	fmt.Println(errors.Is(lease.Release(ctx, scheduler.Outcome{}), mutex.ErrLost))
	// Output:
	// true
	// true
}
