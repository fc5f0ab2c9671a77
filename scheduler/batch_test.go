package scheduler_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redcron/redcron/internal/schedulertest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// batchLocker is a scheduler.Locker over a schedulertest.Locker that
// records the lock attempts and can make the batched attempt of chosen
// jobs undecided, or hold AcquireAll until a gate opens.
type batchLocker struct {
	*schedulertest.Locker
	undecided map[string]bool // jobs whose batched attempt fails with mutex.ErrNoQuorum
	gate      chan struct{}   // if not nil, AcquireAll returns once it is closed

	mu       sync.Mutex
	batches  [][]scheduler.LockRequest
	timeouts []time.Duration // the time left to each AcquireAll's context
	acquires []scheduler.LockRequest
}

var _ scheduler.Locker = (*batchLocker)(nil)

func newBatchLocker() *batchLocker {
	return &batchLocker{Locker: schedulertest.NewLocker(), undecided: map[string]bool{}}
}

func (b *batchLocker) Acquire(ctx context.Context, req scheduler.LockRequest) (scheduler.Lease, error) {
	b.mu.Lock()
	b.acquires = append(b.acquires, req)
	b.mu.Unlock()
	return b.Locker.Acquire(ctx, req)
}

func (b *batchLocker) AcquireAll(ctx context.Context, reqs []scheduler.LockRequest) []scheduler.LockResult {
	if len(reqs) == 0 { // New's call, which asks for the inner Locker's check
		return b.Locker.AcquireAll(ctx, nil)
	}
	deadline, _ := ctx.Deadline()
	b.mu.Lock()
	b.batches = append(b.batches, slices.Clone(reqs))
	b.timeouts = append(b.timeouts, time.Until(deadline))
	b.mu.Unlock()

	out := make([]scheduler.LockResult, len(reqs))
	var (
		sent []scheduler.LockRequest
		idx  []int
	)
	for i, req := range reqs {
		if b.undecided[req.Job] {
			out[i].Err = fmt.Errorf("test: job %q: split vote: %w", req.Job, mutex.ErrNoQuorum)
			continue
		}
		sent = append(sent, req)
		idx = append(idx, i)
	}
	for j, r := range b.Locker.AcquireAll(ctx, sent) {
		out[idx[j]] = r
	}
	if b.gate != nil {
		<-b.gate
	}
	return out
}

// recorded returns the requests of every AcquireAll call, each sorted by
// job, with the time its context had left, and those of every Acquire call.
func (b *batchLocker) recorded() (batches [][]scheduler.LockRequest, timeouts []time.Duration, acquires []scheduler.LockRequest) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, reqs := range b.batches {
		reqs = slices.Clone(reqs)
		slices.SortFunc(reqs, func(x, y scheduler.LockRequest) int { return cmp.Compare(x.Job, y.Job) })
		batches = append(batches, reqs)
	}
	return batches, slices.Clone(b.timeouts), slices.Clone(b.acquires)
}

// byJob returns the events of the given kind for tick, by job; it fails
// the test if a job has more than one.
func byJob(t *testing.T, obs *recorder, kind scheduler.Kind, tick time.Time) map[string]scheduler.Event {
	t.Helper()
	out := make(map[string]scheduler.Event)
	for _, ev := range obs.of(kind) {
		if !ev.Tick.Equal(tick) {
			continue
		}
		if prev, dup := out[ev.Job]; dup {
			t.Errorf("two %s events for job %q: %+v and %+v", kind, ev.Job, prev, ev)
		}
		out[ev.Job] = ev
	}
	return out
}

// TestBatchedLocking checks that the ticks of many jobs due at the same
// instant are locked with one AcquireAll call, that the ticks skipped by
// the checks before locking are not in it, and that each result goes to
// its job: won (run), held elsewhere, already run, overlapping a run
// elsewhere, undecided (retried alone, then won).
func TestBatchedLocking(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		tick := t0.Add(time.Minute)
		ctx := context.Background()
		l := newBatchLocker()
		l.undecided["undecided"] = true
		other := func(job string, tick time.Time) scheduler.Lease {
			lease, err := l.Locker.Acquire(ctx, scheduler.LockRequest{Job: job, Tick: tick, TTL: time.Hour, Owner: "other"})
			if err != nil {
				t.Fatalf("Acquire(%s) for another replica: %v", job, err)
			}
			return lease
		}
		other("held", tick)                                                           // another replica runs this very tick
		other("overlap", time.Time{})                                                 // another replica runs a trigger
		if err := other("done", tick).Release(ctx, scheduler.Outcome{}); err != nil { // another replica ran it
			t.Fatal(err)
		}

		var offset time.Duration
		var offsetMu sync.Mutex
		clock := func() time.Time {
			offsetMu.Lock()
			defer offsetMu.Unlock()
			return time.Now().Add(offset)
		}
		obs := &recorder{}
		var log runLog
		s := newScheduler(t, l, scheduler.WithInstanceID("me"), scheduler.WithClock(clock), scheduler.WithObserver(obs.Observe))
		for _, job := range []string{"held", "overlap", "done", "undecided", "won"} {
			mustAdd(t, s, job, "* * * * *", log.job(0))
		}
		mustAdd(t, s, "won-short-ttl", "* * * * *", log.job(0), scheduler.WithLockTTL(3*time.Second))
		// Its tick will be 2s late, beyond its grace.
		mustAdd(t, s, "late", "* * * * *", log.job(0), scheduler.WithMisfireGrace(time.Second))
		// Still running here at the tick.
		unblock := make(chan struct{})
		mustAdd(t, s, "busy", "* * * * *", scheduler.JobFunc(func(ctx context.Context, info scheduler.RunInfo) error {
			log.add(info)
			<-unblock
			return nil
		}))
		stop := start(t, s)
		if _, err := s.Trigger(ctx, "busy"); err != nil {
			t.Fatalf("Trigger(busy): %v", err)
		}
		// The clock steps 2s forward while the loop sleeps until the tick:
		// it notices the tick 2s late.
		sleepUntil(t0.Add(30 * time.Second))
		offsetMu.Lock()
		offset = 2 * time.Second
		offsetMu.Unlock()
		sleepUntil(tick.Add(10 * time.Second))
		close(unblock)
		stop()

		batches, timeouts, acquires := l.recorded()
		var want []scheduler.LockRequest
		for _, job := range []string{"done", "held", "overlap", "undecided", "won", "won-short-ttl"} {
			ttl := 30 * time.Second
			if job == "won-short-ttl" {
				ttl = 3 * time.Second
			}
			want = append(want, scheduler.LockRequest{Job: job, Tick: tick, TTL: ttl, Owner: "me"})
		}
		if len(batches) != 1 || !slices.EqualFunc(batches[0], want, func(x, y scheduler.LockRequest) bool {
			return x.Job == y.Job && x.Tick.Equal(y.Tick) && x.TTL == y.TTL && x.Owner == y.Owner
		}) {
			t.Errorf("AcquireAll calls %+v, want one with %+v", batches, want)
		}
		// The batch is bounded by the longest of its attempts' bounds,
		// min(5s, TTL/3): 5s for the default TTL of 30s, not the 1s of the
		// job with a 3s TTL.
		if len(timeouts) == 0 || timeouts[0] != 5*time.Second {
			t.Errorf("AcquireAll's contexts had %v left, want 5s (the largest min(5s, TTL/3))", timeouts)
		}
		// Only the undecided tick is retried alone (besides the trigger).
		var retried []string
		for _, req := range acquires {
			if !req.Tick.IsZero() {
				retried = append(retried, req.Job)
			}
		}
		if !slices.Equal(retried, []string{"undecided"}) {
			t.Errorf("Acquire calls for the tick: %v, want only undecided's retry", retried)
		}

		started := byJob(t, obs, "run_started", tick)
		wantAttempts := map[string]int{"won": 1, "won-short-ttl": 1, "undecided": 2}
		if len(started) != len(wantAttempts) {
			t.Errorf("runs started %+v, want %v", started, wantAttempts)
		}
		for job, n := range wantAttempts {
			if ev, ok := started[job]; !ok || ev.Attempts != n {
				t.Errorf("run of %s: %+v, want one started after %d attempts", job, ev, n)
			}
		}
		for job, ev := range byJob(t, obs, "run_finished", tick) {
			if ev.Result != "success" {
				t.Errorf("run of %s: %s (%v), want success", job, ev.Result, ev.Err)
			}
		}
		retries := obs.of("lock_retry")
		if len(retries) != 1 || retries[0].Job != "undecided" || retries[0].Attempts != 1 || !errors.Is(retries[0].Err, mutex.ErrNoQuorum) {
			t.Errorf("lock retries %+v, want one of undecided after attempt 1 with mutex.ErrNoQuorum", retries)
		}

		type skip struct {
			reason   string
			attempts int
		}
		wantSkips := map[string]skip{
			"held":    {"held", 1},
			"done":    {"already_run", 1},
			"overlap": {"overlap", 1},
			"busy":    {"overlap", 0},
			"late":    {"misfire", 0},
		}
		skips := byJob(t, obs, "skipped", tick)
		if len(skips) != len(wantSkips) {
			t.Errorf("skips %+v, want %v", skips, wantSkips)
		}
		for job, w := range wantSkips {
			if ev, ok := skips[job]; !ok || ev.Skip != w.reason || ev.Attempts != w.attempts || ev.Err != nil {
				t.Errorf("skip of %s: %+v, want %s after %d attempts", job, ev, w.reason, w.attempts)
			}
		}
		for _, job := range []string{"won", "won-short-ttl", "undecided"} {
			assertReleased(t, l.Locker, job)
		}
	})
}

// TestBatchOfOneUsesAcquire checks that a tick due alone is locked with
// Acquire, as with a Locker that cannot batch.
func TestBatchOfOneUsesAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		l := newBatchLocker()
		obs := &recorder{}
		var log runLog
		s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
		mustAdd(t, s, "minutely", "* * * * *", log.job(0))
		mustAdd(t, s, "hourly", "@hourly", log.job(0))
		stop := start(t, s)
		sleepUntil(t0.Add(150 * time.Second))
		stop()

		batches, _, acquires := l.recorded()
		if len(batches) != 0 || l.AcquireAllCalls() != 0 {
			t.Errorf("AcquireAll calls %+v, want none", batches)
		}
		want := []time.Time{t0.Add(time.Minute), t0.Add(2 * time.Minute)}
		var got []time.Time
		for _, req := range acquires {
			if req.Job != "minutely" {
				t.Errorf("Acquire for %+v", req)
			}
			got = append(got, req.Tick)
		}
		if !slices.EqualFunc(got, want, time.Time.Equal) {
			t.Errorf("Acquire calls for ticks %v, want %v", got, want)
		}
		if ran := log.ticks(); !slices.EqualFunc(ran, want, time.Time.Equal) {
			t.Errorf("ran %v, want %v", ran, want)
		}
	})
}

// TestBatchLeaseOfRemovedJobIsReleased removes a job while the batch that
// wins its tick's lease is in flight: the lease is released, the job does
// not run, and the other job of the batch runs.
func TestBatchLeaseOfRemovedJobIsReleased(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Now()
		tick := t0.Add(time.Minute)
		l := newBatchLocker()
		l.gate = make(chan struct{})
		obs := &recorder{}
		var log runLog
		s := newScheduler(t, l, scheduler.WithObserver(obs.Observe))
		mustAdd(t, s, "kept", "* * * * *", log.job(0))
		mustAdd(t, s, "removed", "* * * * *", log.job(0))
		stop := start(t, s)
		sleepUntil(tick)
		synctest.Wait() // AcquireAll has won both leases and waits at the gate
		if g, held := l.Held("removed"); !held || !g.Tick.Equal(tick) {
			t.Fatalf("lease of removed: %+v, %v; want held for %v by the batch", g, held, tick)
		}
		if err := s.Remove("removed"); err != nil {
			t.Fatal(err)
		}
		close(l.gate)
		synctest.Wait()

		if g, held := l.Held("removed"); held {
			t.Errorf("lease of the removed job still held: %+v", g)
		}
		grants := l.Grants()
		i := slices.IndexFunc(grants, func(g schedulertest.Grant) bool { return g.Job == "removed" })
		if i < 0 || grants[i].Released.IsZero() || grants[i].Lost {
			t.Errorf("grants %+v, want the removed job's released", grants)
		}
		if ran := log.all(); len(ran) != 1 || ran[0].Job != "kept" || !ran[0].Tick.Equal(tick) {
			t.Errorf("ran %+v, want only kept's tick", ran)
		}
		if skips := obs.of("skipped"); len(skips) != 0 {
			t.Errorf("skips %+v: a tick abandoned by Remove is not a skip", skips)
		}
		stop()
		if b, _, _ := l.recorded(); len(b) != 1 || len(b[0]) != 2 {
			t.Errorf("AcquireAll calls %+v, want one with both jobs", b)
		}
	})
}

// TestBatchWonAfterNextTick: a batch's lease won only after its job's next
// tick came is run, late, with its delay, rather than released: the claim
// is made, and under overload releasing it would waste most of them.
func TestBatchWonAfterNextTick(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newBatchLocker()
		l.gate = make(chan struct{})
		obs := &recorder{}
		var log runLog
		s := newScheduler(t, l, scheduler.WithSeconds(), scheduler.WithObserver(obs.Observe))
		for _, job := range []string{"a", "b"} {
			mustAdd(t, s, job, "* * * * * *", log.job(0))
		}
		first := time.Now().Truncate(time.Second).Add(time.Second)
		stop := start(t, s)
		sleepUntil(first.Add(1500 * time.Millisecond)) // the next tick's batch is out too, held at the gate
		close(l.gate)
		synctest.Wait()
		stop()

		started := byJob(t, obs, "run_started", first)
		for _, job := range []string{"a", "b"} {
			ev, ok := started[job]
			if !ok {
				t.Errorf("job %s: tick %v, won after the next tick came, did not run (skips: %+v)", job, first, obs.of("skipped"))
				continue
			}
			if ev.StartDelay < time.Second {
				t.Errorf("job %s: start delay %v, want the time the lease took (1.5 s)", job, ev.StartDelay)
			}
		}
	})
}
