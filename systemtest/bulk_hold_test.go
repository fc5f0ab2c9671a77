package systemtest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestBulkClaimMaxHold: runs claimed in bulk live under their replica's
// anchor, which is kept alive while the replica runs; the max hold
// (mutex.WithMaxHold, 3 s here) bounds each run's hold, counted from its
// own claim, not from the anchor's. Over 7 s, no run of "slow" (1.9 s
// each, every second it can) is cancelled (before, the run going on when
// the anchor reached the max hold was, however young), and the run of
// "long", which would go on for 6 s, is cancelled with ErrMaxHold once it
// has been held for the max hold.
func TestBulkClaimMaxHold(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 3)
	const hold = 3 * time.Second
	s, err := redcron.New(c.Addrs(),
		redcron.WithLockOptions(mutex.WithTrustedNodes(), mutex.WithMaxTTL(2*time.Second), mutex.WithMaxHold(hold)),
		redcron.WithSchedulerOptions(scheduler.WithSeconds(), scheduler.WithInstanceID("replica-a")))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var runs int
	var cancelled []error
	err = s.Add("slow", "* * * * * *", func(ctx context.Context, info scheduler.RunInfo) error {
		select {
		case <-ctx.Done():
		case <-time.After(1900 * time.Millisecond):
		}
		mu.Lock()
		defer mu.Unlock()
		runs++
		if ctx.Err() != nil {
			cancelled = append(cancelled, context.Cause(ctx))
		}
		return nil
	}, scheduler.WithLockTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	type end struct {
		held  time.Duration
		cause error
	}
	long := make(chan end, 10)
	err = s.Add("long", "* * * * * *", func(ctx context.Context, info scheduler.RunInfo) error {
		start := time.Now()
		select {
		case <-ctx.Done():
		case <-time.After(2 * hold):
		}
		long <- end{time.Since(start), context.Cause(ctx)}
		return nil
	}, scheduler.WithLockTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	until := time.Now().Add(7 * time.Second)
	go func() { defer close(done); _ = s.Run(context.Background()) }()
	var first end
	select {
	case first = <-long:
	case <-time.After(time.Until(until)):
	}
	<-time.After(time.Until(until))
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	<-done
	if !errors.Is(first.cause, mutex.ErrMaxHold) || first.held < hold-100*time.Millisecond {
		t.Errorf("long's run cancelled after %v with %v, want ErrMaxHold after %v", first.held, first.cause, hold)
	}
	mu.Lock()
	defer mu.Unlock()
	if runs < 2 {
		t.Fatalf("slow ran %d times", runs)
	}
	if len(cancelled) > 0 {
		t.Errorf("%d of %d runs of slow (1.9 s each, under a max hold of 3 s) cancelled: %v", len(cancelled), runs, cancelled)
	}
}
