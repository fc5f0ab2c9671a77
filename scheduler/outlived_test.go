package scheduler

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// outlivedLocker grants every tick a lease whose validity ends valid after
// it is kept, but whose kept context is never cancelled: a keepalive whose
// timer a busy process has not run yet.
type outlivedLocker struct{ valid time.Duration }

type outlivedLease struct{ valid time.Duration }

func (l outlivedLocker) Acquire(context.Context, LockRequest) (Lease, error) {
	return outlivedLease(l), nil
}
func (l outlivedLocker) AcquireAll(ctx context.Context, reqs []LockRequest) []LockResult {
	out := make([]LockResult, len(reqs))
	for i := range out {
		out[i].Lease = outlivedLease(l)
	}
	return out
}

func (outlivedLease) Fence() uint64 { return 1 }
func (l outlivedLease) Keep(ctx context.Context) context.Context {
	until := time.Now().Add(l.valid)
	return context.WithValue(ctx, validityKey{}, func() time.Time { return until })
}
func (outlivedLease) Release(context.Context, Outcome) error { return nil }

// TestOutlivedLeaseDoesNotStart: a run whose lease's validity has ended
// does not start, even while the lease's kept context is not cancelled
// yet; its tick is reported skipped as lease_lost.
func TestOutlivedLeaseDoesNotStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var skips []Event
		s, err := New(outlivedLocker{}, WithSeconds(), WithObserver(func(e Event) {
			if e.Kind == KindSkipped {
				skips = append(skips, e)
			}
		}))
		if err != nil {
			t.Fatal(err)
		}
		var ran atomic.Int32
		if err := s.Add("job", "* * * * * *", func(context.Context, RunInfo) error { ran.Add(1); return nil }); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		time.Sleep(2500 * time.Millisecond)
		cancel()
		<-done
		if n := ran.Load(); n != 0 {
			t.Errorf("the job ran %d times under leases whose validity had ended", n)
		}
		if len(skips) == 0 || skips[0].Skip != skipLeaseLost {
			t.Errorf("skips %+v; want lease_lost", skips)
		}
	})
}

// TestOutlivedLeaseNoRetry: a failed try is not tried again once its
// lease's validity has ended, though the kept context is not cancelled.
func TestOutlivedLeaseNoRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, err := New(outlivedLocker{valid: 500 * time.Millisecond}, WithSeconds())
		if err != nil {
			t.Fatal(err)
		}
		var tries atomic.Int32
		job := func(context.Context, RunInfo) error { tries.Add(1); return errors.New("failed") }
		if err := s.Add("job", "0 * * * * *", job, WithRetry(3, time.Second)); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = s.Run(ctx); close(done) }()
		time.Sleep(70 * time.Second) // the first tick, at the minute, and its backoffs

		cancel()
		<-done
		if n := tries.Load(); n != 1 {
			t.Errorf("%d tries; want 1: the lease's validity ended before the second", n)
		}
	})
}
