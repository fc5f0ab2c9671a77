package scheduler

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// outlivedLocker grants every tick a lease whose validity ended as it was
// kept, but whose kept context is never cancelled: a keepalive whose timer
// a busy process has not run yet.
type outlivedLocker struct{}

type outlivedLease struct{}

func (outlivedLocker) Acquire(context.Context, LockRequest) (Lease, error) { return outlivedLease{}, nil }
func (l outlivedLocker) AcquireAll(ctx context.Context, reqs []LockRequest) []LockResult {
	out := make([]LockResult, len(reqs))
	for i := range out {
		out[i].Lease = outlivedLease{}
	}
	return out
}
func (outlivedLocker) Check(LockRequest) error { return nil }

func (outlivedLease) Fence() uint64 { return 1 }
func (outlivedLease) Keep(ctx context.Context) context.Context {
	until := time.Now()
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
			if e.Kind == eventSkipped {
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
