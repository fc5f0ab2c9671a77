package schedulertest_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

var (
	t1 = time.Date(2025, 1, 1, 1, 0, 0, 0, time.UTC)
	t2 = t1.Add(time.Hour)
)

func req(job string, tick time.Time) scheduler.LockRequest {
	return scheduler.LockRequest{Job: job, Tick: tick, TTL: 30 * time.Second, Owner: "test"}
}

func mustAcquire(t *testing.T, l *schedulertest.Locker, r scheduler.LockRequest) scheduler.Lease {
	t.Helper()
	lease, err := l.Acquire(context.Background(), r)
	if err != nil {
		t.Fatalf("Acquire(%s, %v): %v", r.Job, r.Tick, err)
	}
	return lease
}

func TestAcquireRefusals(t *testing.T) {
	tests := []struct {
		name    string
		holding time.Time // tick of the held lease
		ask     time.Time
		want    error
	}{
		{"same tick", t1, t1, mutex.ErrHeld},
		{"later tick", t1, t2, scheduler.ErrOverlap},
		{"earlier tick", t2, t1, mutex.ErrHeld},
		{"trigger during a tick", t1, time.Time{}, mutex.ErrHeld},
		{"tick during a trigger", time.Time{}, t1, scheduler.ErrOverlap},
		{"trigger during a trigger", time.Time{}, time.Time{}, mutex.ErrHeld},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := schedulertest.NewLocker()
			mustAcquire(t, l, req("job", tt.holding))
			lease, err := l.Acquire(context.Background(), req("job", tt.ask))
			if lease != nil || !errors.Is(err, tt.want) {
				t.Errorf("Acquire = %v, %v; want %v", lease, err, tt.want)
			}
			// Other jobs are independent.
			mustAcquire(t, l, req("other", tt.ask))
		})
	}
}

func TestMarkAndFence(t *testing.T) {
	l := schedulertest.NewLocker()
	ctx := context.Background()
	a := mustAcquire(t, l, req("job", t2))
	if got := l.Mark("job"); !got.Equal(t2) {
		t.Errorf("mark after acquisition = %v, want %v", got, t2)
	}
	if err := a.Release(ctx, scheduler.Outcome{}); err != nil {
		t.Fatal(err)
	}
	for _, tick := range []time.Time{t1, t2} {
		if _, err := l.Acquire(ctx, req("job", tick)); !errors.Is(err, mutex.ErrAlreadyRun) {
			t.Errorf("Acquire(%v) after %v ran = %v, want ErrAlreadyRun", tick, t2, err)
		}
	}
	// A trigger ignores and keeps the mark.
	b := mustAcquire(t, l, req("job", time.Time{}))
	if err := b.Release(ctx, scheduler.Outcome{}); err != nil {
		t.Fatal(err)
	}
	if got := l.Mark("job"); !got.Equal(t2) {
		t.Errorf("mark after a trigger = %v, want %v", got, t2)
	}
	c := mustAcquire(t, l, req("job", t2.Add(time.Hour)))
	if fences := [...]uint64{a.Fence(), b.Fence(), c.Fence()}; fences != [...]uint64{1, 2, 3} {
		t.Errorf("fences %v, want 1, 2, 3", fences)
	}
	if d := mustAcquire(t, l, req("other", t1)); d.Fence() != 1 {
		t.Errorf("fence of another job = %d, want 1", d.Fence())
	}
	grants := l.Grants()
	if len(grants) != 4 || grants[0].Released.IsZero() || grants[1].Released.IsZero() || !grants[2].Released.IsZero() {
		t.Errorf("grants %+v", grants)
	}
}

func TestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := schedulertest.NewLocker()
		ctx := context.Background()
		now := time.Now()
		a := mustAcquire(t, l, req("job", now))
		time.Sleep(29 * time.Second)
		if _, err := l.Acquire(ctx, req("job", now.Add(time.Minute))); !errors.Is(err, scheduler.ErrOverlap) {
			t.Errorf("Acquire within the TTL = %v, want ErrOverlap", err)
		}
		time.Sleep(time.Second)
		if _, held := l.Held("job"); held {
			t.Error("lease held past its TTL")
		}
		b := mustAcquire(t, l, req("job", now.Add(time.Minute)))
		if err := a.Release(ctx, scheduler.Outcome{}); !errors.Is(err, mutex.ErrLost) {
			t.Errorf("Release of the expired lease = %v, want mutex.ErrLost", err)
		}
		if g, held := l.Held("job"); !held || g.Fence != b.Fence() {
			t.Errorf("the expired lease's Release freed the new one: %+v, %v", g, held)
		}
		if ctx := a.Keep(context.Background()); !errors.Is(context.Cause(ctx), mutex.ErrLost) {
			t.Errorf("Keep of the expired lease: cause %v, want mutex.ErrLost", context.Cause(ctx))
		}
		if g := l.Grants(); !g[0].Lost || g[1].Lost {
			t.Errorf("grants %+v, want the first lost", g)
		}

		// A kept lease does not expire.
		kctx := b.Keep(context.Background())
		time.Sleep(time.Hour)
		if _, held := l.Held("job"); !held || kctx.Err() != nil {
			t.Error("kept lease expired")
		}
		if err := b.Release(ctx, scheduler.Outcome{}); err != nil {
			t.Errorf("Release: %v", err)
		}
		if kctx.Err() == nil {
			t.Error("Keep's context not cancelled by Release")
		}
	})
}

func TestLoseLease(t *testing.T) {
	l := schedulertest.NewLocker()
	if l.LoseLease("job") {
		t.Error("LoseLease with no lease reported true")
	}
	a := mustAcquire(t, l, req("job", t1))
	ctx := a.Keep(context.Background())
	if !l.LoseLease("job") {
		t.Fatal("LoseLease reported false")
	}
	<-ctx.Done()
	if err := context.Cause(ctx); !errors.Is(err, mutex.ErrLost) {
		t.Errorf("cause %v, want mutex.ErrLost", err)
	}
	if _, held := l.Held("job"); held {
		t.Error("lost lease still held")
	}
	if _, err := l.Acquire(context.Background(), req("job", t1)); !errors.Is(err, mutex.ErrAlreadyRun) {
		t.Errorf("the lost tick = %v, want ErrAlreadyRun: the mark stays", err)
	}
	mustAcquire(t, l, req("job", t2))
	if err := a.Release(context.Background(), scheduler.Outcome{}); !errors.Is(err, mutex.ErrLost) {
		t.Errorf("Release = %v, want mutex.ErrLost", err)
	}
	if _, held := l.Held("job"); !held {
		t.Error("the lost lease's Release freed the new one")
	}
}

func TestRelease(t *testing.T) {
	l := schedulertest.NewLocker()
	a := mustAcquire(t, l, req("job", t1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := a.Release(ctx, scheduler.Outcome{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Release with a cancelled context = %v, want context.Canceled", err)
	}
	if _, held := l.Held("job"); !held {
		t.Error("Release with a cancelled context released")
	}
	for range 2 {
		if err := a.Release(context.Background(), scheduler.Outcome{}); err != nil {
			t.Errorf("Release: %v", err)
		}
	}
	if _, held := l.Held("job"); held {
		t.Error("still held")
	}
}

func TestFailNext(t *testing.T) {
	l := schedulertest.NewLocker()
	l.FailNext(2)
	for i := range 2 {
		if _, err := l.Acquire(context.Background(), req("job", t1)); !errors.Is(err, mutex.ErrNoQuorum) {
			t.Errorf("attempt %d = %v, want ErrNoQuorum", i, err)
		}
	}
	mustAcquire(t, l, req("job", t1))
	l.FailNext(5)
	l.FailNext(0)
	mustAcquire(t, l, req("other", t1))
	if g := l.Grants(); len(g) != 2 {
		t.Errorf("grants %+v: failed attempts granted something", g)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Acquire(ctx, req("third", t1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire with a cancelled context = %v", err)
	}
}

// TestConcurrentAcquire races many acquisitions of one tick: one wins.
func TestConcurrentAcquire(t *testing.T) {
	l := schedulertest.NewLocker()
	var wins, refusals atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			_, err := l.Acquire(context.Background(), req("job", t1))
			switch {
			case err == nil:
				wins.Add(1)
			case errors.Is(err, mutex.ErrHeld):
				refusals.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 || refusals.Load() != 49 {
		t.Errorf("%d wins and %d ErrHeld, want 1 and 49", wins.Load(), refusals.Load())
	}
}

func TestCheck(t *testing.T) {
	l := schedulertest.NewLocker()
	for _, r := range []scheduler.LockRequest{{Job: "", TTL: time.Second}, {Job: "job", TTL: 0}} {
		if err := l.Check(r); err == nil {
			t.Errorf("Check(%+v) = nil", r)
		}
		if _, err := l.Acquire(context.Background(), r); err == nil {
			t.Errorf("Acquire(%+v) succeeded", r)
		}
	}
	if err := l.Check(req("job", t1)); err != nil {
		t.Errorf("CheckRequest: %v", err)
	}
}

// TestAcquireAll checks that each request of AcquireAll gets what Acquire
// would give it, in order, that FailNext counts requests and that the calls
// are counted.
func TestAcquireAll(t *testing.T) {
	l := schedulertest.NewLocker()
	ctx := context.Background()
	mustAcquire(t, l, req("held", t1))
	mustAcquire(t, l, req("overlap", t1))
	if err := mustAcquire(t, l, req("done", t1)).Release(ctx, scheduler.Outcome{}); err != nil {
		t.Fatal(err)
	}
	l.FailNext(1)
	reqs := []scheduler.LockRequest{
		req("failed", t1), req("won", t1), req("held", t1), req("overlap", t2), req("done", t1), req("", t1),
	}
	res := l.AcquireAll(ctx, reqs)
	if len(res) != len(reqs) {
		t.Fatalf("%d results for %d requests", len(res), len(reqs))
	}
	wantErrs := []error{mutex.ErrNoQuorum, nil, mutex.ErrHeld, scheduler.ErrOverlap, mutex.ErrAlreadyRun}
	for i, want := range wantErrs {
		r := res[i]
		switch {
		case want == nil && (r.Err != nil || r.Lease == nil):
			t.Errorf("%s: %v, %v; want a lease", reqs[i].Job, r.Lease, r.Err)
		case want != nil && (r.Lease != nil || !errors.Is(r.Err, want)):
			t.Errorf("%s: %v, %v; want %v", reqs[i].Job, r.Lease, r.Err, want)
		}
	}
	if r := res[5]; r.Lease != nil || r.Err == nil {
		t.Errorf("empty job name: %v, %v; want an error", r.Lease, r.Err)
	}
	if g, held := l.Held("won"); !held || !g.Tick.Equal(t1) || g.Fence != res[1].Lease.Fence() {
		t.Errorf("Held(won) = %+v, %v; want the lease of the batch", g, held)
	}
	// The failed request's job is free: the failure was the injected one.
	mustAcquire(t, l, req("failed", t1))

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	for _, r := range l.AcquireAll(cctx, []scheduler.LockRequest{req("other", t1)}) {
		if r.Lease != nil || !errors.Is(r.Err, context.Canceled) {
			t.Errorf("AcquireAll with a cancelled context: %v, %v; want context.Canceled", r.Lease, r.Err)
		}
	}
	if n := l.AcquireAllCalls(); n != 2 {
		t.Errorf("AcquireAllCalls() = %d, want 2", n)
	}
}
