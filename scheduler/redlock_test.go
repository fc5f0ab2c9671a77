package scheduler_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/lockwire"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
	"github.com/redcron/redcron/store"
)

// TestRedlockLockerHolders: the Redlock adapter tells apart what holds a
// job's lock on a quorum: another replica at this tick (mutex.ErrHeld), a run of
// an earlier tick (ErrOverlap), or this replica's own abandoned attempt at
// this tick, which is being released and so is worth retrying
// (mutex.ErrNoQuorum).
func TestRedlockLockerHolders(t *testing.T) {
	c := redistest.Start(t, 3)
	r := redlockOn(t, c)
	locker := scheduler.NewRedlockLocker(r)
	ctx := context.Background()
	tick := time.Now().Truncate(time.Second)
	for _, tc := range []struct {
		name          string
		owner         string
		occurrence    time.Time
		want, notWant error
	}{
		{"another replica, this tick", "replica-b", tick, mutex.ErrHeld, mutex.ErrNoQuorum},
		{"this replica, an earlier tick", "replica-a", tick.Add(-time.Second), scheduler.ErrOverlap, mutex.ErrHeld},
		{"this replica, this tick", "replica-a", tick, mutex.ErrNoQuorum, mutex.ErrHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job := "job-" + tc.name
			// The first phase of an acquisition on every node, as left by an
			// attempt whose answers came too late to be counted.
			ks, err := engine.NewKeyspace(lockwire.Of(r).KeyPrefix)
			if err != nil {
				t.Fatal(err)
			}
			keys, err := ks.Lock(job)
			if err != nil {
				t.Fatal(err)
			}
			v := engine.Value{Token: engine.NewToken(), Acquired: time.Now(), Occurrence: tc.occurrence.UnixMilli(), Owner: tc.owner}
			for _, s := range c.Nodes() {
				if err := s.Client(t).Set(ctx, keys.Lock, v.String(), 5*time.Second).Err(); err != nil {
					t.Fatal(err)
				}
			}
			req := scheduler.LockRequest{Job: job, Tick: tick, TTL: 5 * time.Second, Owner: "replica-a"}
			_, err = locker.Acquire(ctx, req)
			var cause *mutex.QuorumError
			if !errors.Is(err, tc.want) || errors.Is(err, tc.notWant) || !errors.As(err, &cause) || !errors.Is(cause, mutex.ErrHeld) {
				t.Fatalf("Acquire: %v, want %v (and the cause, a *mutex.QuorumError matching mutex.ErrHeld)", err, tc.want)
			}
			if res := locker.AcquireAll(ctx, []scheduler.LockRequest{req}); !errors.Is(res[0].Err, tc.want) {
				t.Fatalf("AcquireAll: %v, want %v", res[0].Err, tc.want)
			}
		})
	}
}

// TestRedlockLockerBadInput: the Redlock adapter over a nil Redlock is
// refused by New, and Add refuses what the Redlock would.
func TestRedlockLockerBadInput(t *testing.T) {
	if _, err := scheduler.New(scheduler.NewRedlockLocker(nil)); err == nil || !strings.Contains(err.Error(), "nil Locker") {
		t.Errorf("New over NewRedlockLocker(nil) = %v, want an error naming the nil Redlock", err)
	}

	s, err := scheduler.New(scheduler.NewRedlockLocker(redlockOn(t, redistest.Start(t, 1))))
	if err != nil {
		t.Fatal(err)
	}
	nop := scheduler.JobFunc(func(context.Context, scheduler.RunInfo) error { return nil })
	// Above the Redlock's max TTL (1m by default).
	if err := s.Add("long", "@hourly", nop, scheduler.WithLockTTL(2*time.Minute)); !errors.Is(err, mutex.ErrInvalidOption) ||
		!errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), "max TTL") {
		t.Errorf("Add with a lock TTL above the max TTL = %v, want mutex.ErrInvalidOption and mutex.ErrInvalidOption naming the max TTL", err)
	}
	// A monthly job catching up a month back would reach past the 7 days
	// the Redlock keeps a tick's mark: the tick could run again.
	if err := s.Add("monthly", "@monthly", nop, scheduler.WithCatchUp(31*24*time.Hour)); !errors.Is(err, mutex.ErrInvalidOption) ||
		!strings.Contains(err.Error(), "WithStateTTL") || !strings.Contains(err.Error(), `"monthly"`) {
		t.Errorf("Add with a catch-up window past the state TTL = %v, want mutex.ErrInvalidOption naming the job and WithStateTTL", err)
	}
	if err := s.Add("grace", "@daily", nop, scheduler.WithMisfireGrace(8*24*time.Hour)); !errors.Is(err, mutex.ErrInvalidOption) {
		t.Errorf("Add with a misfire grace past the state TTL = %v, want mutex.ErrInvalidOption", err)
	}
	if len(s.Entries()) != 0 {
		t.Error("a job was registered anyway")
	}
	long, err := mutex.New(nodesOf(redlockOn(t, redistest.Start(t, 1))), mutex.WithStateTTL(32*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	s2, err := scheduler.New(scheduler.NewRedlockLocker(long))
	if err != nil {
		t.Fatal(err)
	}
	if err := s2.Add("monthly", "@monthly", nop, scheduler.WithCatchUp(31*24*time.Hour)); err != nil {
		t.Errorf("Add with a catch-up window within a 32-day state TTL: %v", err)
	}
	// A lease won further ahead than the max TTL: a node restarted within
	// the lead could not vouch that the tick was not run.
	short, err := mutex.New(nodesOf(long), mutex.WithMaxTTL(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	s3, err := scheduler.New(scheduler.NewRedlockLocker(short), scheduler.WithLockAhead(20*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := s3.Add("hourly", "@hourly", nop, scheduler.WithLockTTL(5*time.Second)); !errors.Is(err, mutex.ErrInvalidOption) ||
		!strings.Contains(err.Error(), "WithLockAhead") {
		t.Errorf("Add with a lead above the max TTL = %v, want mutex.ErrInvalidOption naming WithLockAhead", err)
	}
}

// redlockOn returns a Redlock over c's servers, trusting them (no restart
// quarantine).
func redlockOn(t *testing.T, c *redistest.Cluster) *mutex.Redlock {
	t.Helper()
	var nodes []*store.Node
	for _, s := range c.Nodes() {
		n, err := store.NewNode(s.Addr(), s.Client(t))
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	r, err := mutex.New(nodes, mutex.WithTrustedNodes())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestRedlockLockerShutdownLeaseExpiry: Shutdown cancels a job that takes
// two seconds more to return; its keepalive stops with its context, so its
// one-second lease has expired by the release. The run is reported as
// canceled, what it is, not as lock_lost, which would read as a fault of
// the nodes.
func TestRedlockLockerShutdownLeaseExpiry(t *testing.T) {
	r := redlockOn(t, redistest.Start(t, 1))
	finished := make(chan scheduler.Event, 10)
	s, err := scheduler.New(scheduler.NewRedlockLocker(r), scheduler.WithSeconds(),
		scheduler.WithObserver(func(e scheduler.Event) {
			if e.Kind == "run_finished" {
				finished <- e
			}
		}))
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 1)
	err = s.Add("slow", "* * * * * *", scheduler.JobFunc(func(ctx context.Context, _ scheduler.RunInfo) error {
		started <- struct{}{}
		<-ctx.Done()
		<-time.After(2 * time.Second) // winding down, past the lease's TTL
		return context.Cause(ctx)
	}), scheduler.WithLockTTL(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Run(context.Background()) }()
	<-started
	expired, cancel := context.WithCancel(context.Background())
	cancel() // cancel the job at once
	if err := s.Shutdown(expired); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	e := <-finished
	if e.Result != "canceled" || !errors.Is(e.Err, scheduler.ErrShutdown) {
		t.Fatalf("run finished %v (%v), want canceled with ErrShutdown", e.Result, e.Err)
	}
}

// nodesOf returns r's nodes, as mutex.New takes them.
func nodesOf(r *mutex.Redlock) []*store.Node {
	var out []*store.Node
	for _, n := range lockwire.Of(r).Nodes {
		out = append(out, (*store.Node)(n))
	}
	return out
}
